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
	if len(r.Warnings) != 0 {
		t.Errorf("warnings %v", r.Warnings)
	}
}

// TestParseReportsEveryProblem: one error lists each bad table's problems.
func TestParseReportsEveryProblem(t *testing.T) {
	bad := `
[[endpoint]]
model = "m"
url = "ftp://x"
key = "K"

[[endpoint]]
endpoint_id = "b"
model = "m"
url = "http://a/v1"
api_base_url = "http://b/v1"
key = "K"
type = "grpc"

[[endpoint]]
endpoint_id = "c"
url = "http://a/v1"
key = "K"
headers = { X = 1 }
modle = "typo"
`
	_, err := Parse([]byte(bad), "e.toml")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"endpoint_id is missing", `url = "ftp://x"`, "disagree", `type = "grpc" is unknown`, `(endpoint_id "c"): model is missing`, "headers.X = 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	good := strings.Replace(labFile, `key = "OPENAI_API_KEY"`, "key = \"OPENAI_API_KEY\"\nmodle = \"x\"", 1)
	r, err := Parse([]byte(good), "e.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], `did you mean "model"`) {
		t.Errorf("warnings %v", r.Warnings)
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
