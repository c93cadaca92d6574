package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/internal/tomlschema"
)

// Inference is the [inference] section (grpo's): generate the rollouts on
// an OpenAI-compatible server (vLLM, grpo serve) instead of in this
// process. The server is named by URL, or by EndpointID in the
// endpoints.toml at EndpointsPath (whose replicas share the load); left
// empty, rollouts are generated in-process.
type Inference struct {
	// URL is the server's API root, e.g. "http://127.0.0.1:8000/v1".
	URL string `toml:"url"`
	// Model is the base model's name on the server at URL (vLLM's
	// --served-model-name); "" means the run's model.
	Model string `toml:"model"`
	// Key names the environment variable holding the server's API key
	// (vLLM's --api-key); "" sends none.
	Key string `toml:"key"`
	// EndpointID names an endpoint of EndpointsPath instead of URL.
	EndpointID    string `toml:"endpoint_id"`
	EndpointsPath string `toml:"endpoints_path"`
	// Timeout bounds one request, in seconds.
	Timeout float64 `toml:"timeout"`
	// MaxConcurrent bounds the requests in flight.
	MaxConcurrent int `toml:"max_concurrent"`
}

// DefaultInference is [inference] before a file sets anything: off.
func DefaultInference() Inference {
	return Inference{EndpointsPath: endpoints.DefaultPath, Timeout: 600, MaxConcurrent: 64}
}

// On reports whether rollouts are generated on a server.
func (i Inference) On() bool { return i.URL != "" || i.EndpointID != "" }

// RequestTimeout is Timeout as a duration.
func (i Inference) RequestTimeout() time.Duration {
	return time.Duration(i.Timeout * float64(time.Second))
}

// checkInference adds [inference]'s problems to l.
func (c *Config) checkInference(l *problems) {
	in := c.Inference
	bad := func(key, msg string, args ...any) {
		l.at(fmt.Sprintf("[inference] "+msg, args...), "inference."+key, "inference")
	}
	switch {
	case in.URL != "" && in.EndpointID != "":
		bad("endpoint_id", "url = %q and endpoint_id = %q are both set; keep one (url names the server, endpoint_id an endpoint of %s)", in.URL, in.EndpointID, in.EndpointsPath)
	case in.URL != "" && !strings.HasPrefix(in.URL, "http://") && !strings.HasPrefix(in.URL, "https://"):
		bad("url", `url = %q: want the server's API root, e.g. url = "http://127.0.0.1:8000/v1"`, in.URL)
	case in.EndpointID != "" && (in.Model != "" || in.Key != ""):
		key := "model"
		if in.Model == "" {
			key = "key"
		}
		bad(key, "%s goes with url; the endpoint %q takes its model and key from %s", key, in.EndpointID, in.EndpointsPath)
	case !in.On():
		for _, k := range []string{"model", "key", "endpoints_path", "timeout", "max_concurrent"} {
			if c.src.Has("inference." + k) {
				bad(k, `%s is set but neither url nor endpoint_id is: set url = "http://HOST:PORT/v1" (or endpoint_id) to generate rollouts on a server, or remove [inference] to generate them here`, k)
				break
			}
		}
	}
	if !(in.Timeout > 0) {
		bad("timeout", "timeout = %v: want the seconds one request may take, e.g. timeout = 600", in.Timeout)
	}
	if in.MaxConcurrent < 1 {
		bad("max_concurrent", "max_concurrent = %d: want at least 1 request in flight, e.g. max_concurrent = 64", in.MaxConcurrent)
	}
	if in.EndpointID != "" && strings.TrimSpace(in.EndpointsPath) == "" {
		bad("endpoints_path", `endpoints_path is empty; endpoint_id needs the endpoints.toml that defines it, e.g. endpoints_path = %q`, endpoints.DefaultPath)
	}
}

// InferenceEndpoints are the replicas of [inference]'s server: the one at
// url, or endpoint_id's in endpoints_path (read now, relative to the
// working directory). Errors point at the key and say the fix.
func (c *Config) InferenceEndpoints() ([]endpoints.Endpoint, error) {
	in := c.Inference
	l := &problems{src: c.src}
	switch {
	case !in.On():
		return nil, errors.New("[inference] has neither url nor endpoint_id")
	case in.URL != "":
		model := in.Model
		if model == "" {
			model = c.Model
		}
		return []endpoints.Endpoint{{ID: "inference", Model: model, URL: in.URL, KeyVar: in.Key, Type: endpoints.TypeCompletions}}, nil
	}
	reg, err := endpoints.Load(in.EndpointsPath)
	if err != nil {
		l.at(fmt.Sprintf("[inference] endpoint_id = %q: %v; create it (grpo init writes one) or point endpoints_path at yours", in.EndpointID, err), "inference.endpoints_path", "inference.endpoint_id")
		return nil, l.err()
	}
	eps, ok := reg.Lookup(in.EndpointID)
	if !ok {
		msg := fmt.Sprintf("[inference] endpoint_id = %q is not in %s", in.EndpointID, reg.Path)
		if near := tomlschema.Closest(in.EndpointID, reg.IDs()); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		} else {
			msg += fmt.Sprintf("; it has %s", strings.Join(reg.IDs(), ", "))
		}
		l.at(msg, "inference.endpoint_id")
		return nil, l.err()
	}
	return eps, nil
}
