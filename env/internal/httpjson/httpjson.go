// Package httpjson posts JSON to the HTTP services environments call
// (tools, judges, embedding APIs) with a timeout and a bounded reply.
package httpjson

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Post posts payload to url and returns the body of a 2xx reply, at
// most maxBody bytes; other statuses are errors quoting the start of the
// body, so a tool's or an API's complaint reaches whoever reads the error.
func Post(ctx context.Context, client *http.Client, url string, headers map[string]string, payload []byte, timeout time.Duration, maxBody int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("%s did not answer within %v", url, timeout)
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the reply: %v", url, err)
	}
	if int64(len(body)) > maxBody {
		return nil, fmt.Errorf("%s: reply longer than %d bytes", url, maxBody)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s: HTTP %d: %s", url, resp.StatusCode, Preview(body))
	}
	return body, nil
}

// Preview is the start of a body, on one line.
func Preview(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
