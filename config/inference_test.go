package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInferenceSection: [inference] is off by default; url or endpoint_id
// turns it on; each misuse is one line at its key saying the fix.
func TestInferenceSection(t *testing.T) {
	c, err := Parse([]byte(minimalConfig), "r.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Inference.On() || c.Inference != DefaultInference() {
		t.Errorf("default [inference] = %+v", c.Inference)
	}
	c, err = Parse([]byte(minimalConfig+"\n[inference]\nurl = \"http://127.0.0.1:8000/v1\"\ntimeout = 2.5\n"), "r.toml")
	if err != nil {
		t.Fatal(err)
	}
	eps, err := c.InferenceEndpoints()
	if err != nil || len(eps) != 1 || eps[0].URL != "http://127.0.0.1:8000/v1" || eps[0].Model != "Qwen/Qwen3-0.6B" || c.Inference.RequestTimeout().Seconds() != 2.5 {
		t.Errorf("url form: %+v %v (timeout %v)", eps, err, c.Inference.RequestTimeout())
	}
	for _, tc := range []struct{ section, want string }{
		{"url = \"http://a/v1\"\nendpoint_id = \"x\"", `r.toml:11:1: [inference] url = "http://a/v1" and endpoint_id = "x" are both set; keep one`},
		{"url = \"localhost:8000\"", `r.toml:10:1: [inference] url = "localhost:8000": want the server's API root, e.g. url = "http://127.0.0.1:8000/v1"`},
		{"endpoint_id = \"x\"\nmodel = \"m\"", `r.toml:11:1: [inference] model goes with url; the endpoint "x" takes its model and key from configs/endpoints.toml`},
		{"timeout = 30", `r.toml:10:1: [inference] timeout is set but neither url nor endpoint_id is: set url = "http://HOST:PORT/v1"`},
		{"url = \"http://a/v1\"\ntimeout = 0", `r.toml:11:1: [inference] timeout = 0: want the seconds one request may take`},
		{"url = \"http://a/v1\"\nmax_concurrent = 0", `r.toml:11:1: [inference] max_concurrent = 0: want at least 1`},
		{"url = \"http://a/v1\"\nport = 8000", `key "inference.port": unknown key in [inference]`},
	} {
		_, err := Parse([]byte(minimalConfig+"\n[inference]\n"+tc.section+"\n"), "r.toml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("[inference] %q: %v\nwant %s", tc.section, err, tc.want)
		}
	}
}

// TestInferenceEndpointID: endpoint_id resolves through endpoints_path
// to all its replicas; a missing file or id names the key, the file and
// the fix (a did-you-mean for a near miss).
func TestInferenceEndpointID(t *testing.T) {
	dir := t.TempDir()
	ep := filepath.Join(dir, "endpoints.toml")
	text := "[[endpoint]]\nendpoint_id = \"local-vllm\"\nmodel = \"Qwen/Qwen3-0.6B\"\nurl = \"http://a:8000/v1\"\nkey = \"\"\n\n" +
		"[[endpoint]]\nendpoint_id = \"local-vllm\"\nmodel = \"Qwen/Qwen3-0.6B\"\nurl = \"http://b:8000/v1\"\nkey = \"\"\n"
	if err := os.WriteFile(ep, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	parse := func(id, path string) *Config {
		t.Helper()
		c, err := Parse([]byte(minimalConfig+"\n[inference]\nendpoint_id = \""+id+"\"\nendpoints_path = \""+path+"\"\n"), "r.toml")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	eps, err := parse("local-vllm", ep).InferenceEndpoints()
	if err != nil || len(eps) != 2 || eps[1].URL != "http://b:8000/v1" {
		t.Errorf("replicas: %+v %v", eps, err)
	}
	_, err = parse("local-vlm", ep).InferenceEndpoints()
	if want := `r.toml:10:1: [inference] endpoint_id = "local-vlm" is not in ` + ep + `; did you mean "local-vllm"?`; err == nil || err.Error() != want {
		t.Errorf("unknown id: %v\nwant %s", err, want)
	}
	missing := filepath.Join(dir, "none.toml")
	_, err = parse("local-vllm", missing).InferenceEndpoints()
	if err == nil || !strings.HasPrefix(err.Error(), "r.toml:11:1: [inference] endpoint_id = \"local-vllm\": reading endpoints: ") || !strings.Contains(err.Error(), "create it (grpo init writes one) or point endpoints_path at yours") {
		t.Errorf("missing file: %v", err)
	}
}
