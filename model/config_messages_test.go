package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigJSONMessages: a config.json that is not an object, or has a
// value of the wrong type, printed encoding/json's dump of the anonymous
// Go struct it decodes into; the line now names the file, key and fix.
func TestConfigJSONMessages(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	for _, tc := range []struct {
		json string
		want []string
	}{
		{`[{"model_type": "qwen3"}]`, []string{path, "must be one JSON object", "got a JSON array"}},
		{`"qwen3"`, []string{path, "got a JSON string"}},
		{`{"model_type": "qwen3", "hidden_size": "64"}`, []string{path, `"hidden_size" must be a number, got a JSON string`}},
		{`{"model_type": "qwen3", "rope_scaling": 5}`, []string{path, `"rope_scaling" must be an object, got a JSON number`}},
		{"{\n\"model_type\": \"qwen3\",\n}", []string{path, "invalid JSON at line 3"}},
	} {
		if err := os.WriteFile(path, []byte(tc.json), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(dir)
		if err == nil {
			t.Fatalf("%s: accepted", tc.json)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", tc.json, err, w)
			}
		}
		if strings.Contains(err.Error(), "struct") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q dumps a Go type or spans lines", tc.json, err)
		}
	}
}

// TestConfigEOSOutsideVocab: an eos_token_id past vocab_size was accepted;
// generation would never stop on it.
func TestConfigEOSOutsideVocab(t *testing.T) {
	base := `"model_type":"qwen3","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100`
	for _, eos := range []string{`100`, `[5, 151645]`, `-1`} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{`+base+`,"eos_token_id":`+eos+`}`), 0o644)
		_, err := LoadConfig(dir)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "config.json")+": eos_token_id") ||
			!strings.Contains(err.Error(), "outside the vocabulary (vocab_size 100)") {
			t.Errorf("eos_token_id %s: got %v", eos, err)
		}
	}
	if _, err := ParseConfig([]byte(`{` + base + `,"eos_token_id":[5, 99]}`)); err != nil {
		t.Errorf("ids inside the vocabulary: %v", err)
	}
}
