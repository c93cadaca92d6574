package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadEndpoints(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "endpoints.toml")
	os.WriteFile(p, []byte(`[[endpoint]]
endpoint_id = "mini"
model = "gpt-4.1-mini"
url = "https://api.openai.com/v1"
key = "OPENAI_API_KEY"
type = "openai_chat_completions"

[[endpoint]]
endpoint_id = "mini"
model = "gpt-4.1-mini"
api_base_url = "https://other.example/v1"
api_key_var = "OTHER_KEY"
headers = { X-Team = "a" }
`), 0o644)
	eps, err := LoadEndpoints(dir) // a directory means its endpoints.toml
	if err != nil {
		t.Fatal(err)
	}
	got := eps.Lookup("mini")
	if len(got) != 2 || got[0].URL != "https://api.openai.com/v1" || got[1].URL != "https://other.example/v1" || got[1].KeyVar != "OTHER_KEY" || got[1].Headers["X-Team"] != "a" || got[0].Type != "openai_chat_completions" {
		t.Errorf("entries %+v", got)
	}
	if eps.Lookup("none") != nil {
		t.Error("unknown id found")
	}
	// Every problem at once, each at its line.
	os.WriteFile(p, []byte(`[[endpoint]]
endpoint_id = "a"
model = "m"
url = "u"
kye = "K"

[[endpoint]]
endpoint_id = "b"
model = 3
url = "u"
api_base_url = "v"
key = "K"
type = "grpc"
`), 0o644)
	_, err = LoadEndpoints(p)
	want := []string{
		"endpoints.toml:1:3: [[endpoint]] 1: key is missing",
		"endpoints.toml:5:1: [[endpoint]] 1: unknown key kye; did you mean key?",
		"endpoints.toml:9:1: [[endpoint]] 2: model must be a string",
		`endpoints.toml:11:1: [[endpoint]] 2: api_base_url = "v" conflicts with url = "u"`,
		`endpoints.toml:13:1: [[endpoint]] 2: type "grpc" is unknown`,
	}
	if err == nil {
		t.Fatal("bad endpoints accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d problems:\n%v", len(lines), err)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("problem %d = %q, want %q", i+1, lines[i], w)
		}
	}
	os.WriteFile(p, []byte("x = 1\n"), 0o644)
	if _, err := LoadEndpoints(p); err == nil || !strings.Contains(err.Error(), "no [[endpoint]]") {
		t.Errorf("empty: %v", err)
	}
}
