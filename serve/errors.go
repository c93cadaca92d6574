package serve

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/grpo-dev/grpo/endpoints"
)

// apiError is an OpenAI-style error: the HTTP status, and the error
// object's message and param.
type apiError struct {
	status  int
	message string
	param   string
}

func (e *apiError) Error() string { return e.message }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, param: param, message: fmt.Sprintf(format, args...)}
}

// errorType is the error object's type for a status, as OpenAI names them.
func errorType(status int) string {
	switch {
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// writeError answers {"error": {"message", "type", "param", "code"}}.
func writeError(w http.ResponseWriter, e *apiError) {
	body := endpoints.ErrorBody{Error: endpoints.ErrorDetail{Message: e.message, Type: errorType(e.status), Code: e.status}}
	if e.param != "" {
		body.Error.Param = &e.param
	}
	if e.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
