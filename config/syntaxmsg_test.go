package config

import (
	"strings"
	"testing"
)

// TestEvalTypeErrorNamesKeyAndFix: seed = "x" in an eval config printed
// go-toml's "cannot decode TOML string into struct field
// config.EvalFile.Seed"; it now names the key, the wanted type and an
// example, at the value's position.
func TestEvalTypeErrorNamesKeyAndFix(t *testing.T) {
	_, err := ParseEval([]byte("seed = \"x\"\n[[eval]]\nid = \"reverse-text\"\n"), "e.toml")
	want := `e.toml:1:8: key "seed": want an integer, got a TOML string; write an integer, e.g. seed = 1`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestNonASCIIBareKey: `mäx = 1` said "expected '=' after key"; both
// config kinds now say that a bare key must be ASCII and how to fix it.
func TestNonASCIIBareKey(t *testing.T) {
	doc := []byte("model = \"m\"\nmäx = 1\n")
	for name, parse := range map[string]func() error{
		"run":  func() error { _, err := Parse(doc, "k.toml"); return err },
		"eval": func() error { _, err := ParseEval(doc, "k.toml"); return err },
	} {
		err := parse()
		if err == nil || !strings.HasPrefix(err.Error(), `k.toml:2:2: key "mäx": a bare TOML key may use only ASCII`) || !strings.Contains(err.Error(), `quote it ("mäx" = ...)`) {
			t.Errorf("%s config: %v", name, err)
		}
	}
}
