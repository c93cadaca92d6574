package endpoints

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// labFile has the shapes of verifiers' configs/endpoints.toml: plain
// entries, a replicated id, the long key spellings, a type and headers.
const labFile = `
[[endpoint]]
endpoint_id = "gpt-4.1-mini"
model = "gpt-4.1-mini"
url = "https://api.openai.com/v1"
key = "OPENAI_API_KEY"

[[endpoint]]
endpoint_id = "local"
model = "Qwen/Qwen3-0.6B"
url = "http://10.0.0.1:8000/v1"
key = ""

[[endpoint]]
endpoint_id = "local"
model = "Qwen/Qwen3-0.6B"
api_base_url = "http://10.0.0.2:8000/v1"
api_key_var = ""
type = "openai_completions"
extra_headers = { X-Team = "t1" }
`

func TestParseLabFile(t *testing.T) {
	r, err := Parse([]byte(labFile), "endpoints.toml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.IDs(), ","); got != "gpt-4.1-mini,local" {
		t.Errorf("ids %s", got)
	}
	eps, ok := r.Lookup("local")
	if !ok || len(eps) != 2 {
		t.Fatalf("local: %d replicas, want 2", len(eps))
	}
	if eps[1].URL != "http://10.0.0.2:8000/v1" || eps[1].Type != TypeCompletions || eps[1].Headers["X-Team"] != "t1" {
		t.Errorf("second replica %+v", eps[1])
	}
	if eps[0].Type != TypeChat {
		t.Errorf("default type %q", eps[0].Type)
	}
	if g, _ := r.Lookup("gpt-4.1-mini"); g[0].KeyVar != "OPENAI_API_KEY" {
		t.Errorf("key var %q", g[0].KeyVar)
	}
}

// TestParseReportsEveryProblem: one error lists every problem, each at
// its line with the fix.
func TestParseReportsEveryProblem(t *testing.T) {
	bad := `[[endpoint]]
endpoint_id = "a"
model = "m"
url = "http://u"
kye = "K"

[[endpoint]]
endpoint_id = "b"
model = 3
url = "http://u"
api_base_url = "http://v"
key = "K"
type = "grpc"

[[endpoint]]
endpoint_id = "c"
model = "m"
url = "ftp://x"
key = "K"
headers = { X = 1 }
`
	_, err := Parse([]byte(bad), "endpoints.toml")
	want := []string{
		"endpoints.toml:1:3: [[endpoint]] 1: key is missing",
		"endpoints.toml:5:1: [[endpoint]] 1: unknown key kye; did you mean key?",
		"endpoints.toml:9:1: [[endpoint]] 2: model must be a string",
		`endpoints.toml:11:1: [[endpoint]] 2: api_base_url = "http://v" conflicts with url = "http://u"`,
		`endpoints.toml:13:1: [[endpoint]] 2: type "grpc" is unknown`,
		`endpoints.toml:18:1: [[endpoint]] 3: url = "ftp://x": want an http:// or https:// address`,
		`endpoints.toml:20:13: [[endpoint]] 3: header "X" must be a string`,
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
	if _, err := Parse([]byte("x = 1\n"), "e.toml"); err == nil || !strings.Contains(err.Error(), "e.toml:1:1: top-level key x is unknown") {
		t.Errorf("a stray key: %v", err)
	}
	if _, err := Parse([]byte("# nothing\n"), "e.toml"); err == nil || !strings.Contains(err.Error(), "no [[endpoint]]") {
		t.Errorf("no endpoints: %v", err)
	}
}

func TestLoadDirAndUnknownID(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "endpoints.toml"), []byte(labFile), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Client("gpt-4.1-mni", Options{})
	if err == nil || !strings.Contains(err.Error(), `did you mean "gpt-4.1-mini"`) {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "none.toml")); err == nil {
		t.Error("a missing file loaded")
	}
}
