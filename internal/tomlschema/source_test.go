package tomlschema

import "testing"

// TestScanSourcePositions checks the key index against positions counted
// by hand in the document below.
func TestScanSourcePositions(t *testing.T) {
	doc := "model = 'x'\n[[env]]\nid = 'a'\n  args = { n = 1, deep = { k = 2 } }\n[[env]]\nid = 'b'\n[env.args]\nm = 3\n"
	s := Scan("f", []byte(doc))
	want := map[string][2]int{
		"model":             {1, 1},
		"env":               {2, 3},
		"env.0":             {2, 3},
		"env.0.id":          {3, 1},
		"env.0.args":        {4, 3},
		"env.0.args.n":      {4, 12},
		"env.0.args.deep.k": {4, 28},
		"env.1":             {5, 3},
		"env.1.id":          {6, 1},
		"env.1.args":        {7, 2},
		"env.1.args.m":      {8, 1},
	}
	for path, lc := range want {
		p, ok := s.Pos[path]
		if !ok || p.Line != lc[0] || p.Column != lc[1] {
			t.Errorf("%s at %d:%d, want %d:%d (found %v)", path, p.Line, p.Column, lc[0], lc[1], ok)
		}
	}
	if got := DisplayKey("env.1.args.m"); got != "env[1].args.m" {
		t.Errorf("displayKey = %q", got)
	}
}

// TestScanValues: each value's byte range, whole for arrays and inline
// tables whatever they hold, and where each header's line ends.
func TestScanValues(t *testing.T) {
	doc := "a = 1\nb = [\"]\", 'x', # c ]\n  2]\n[t]  # h\nc = { d = \"}\", e = [1] }\n"
	s := Scan("f", []byte(doc))
	for path, want := range map[string]string{"a": "1", "b": "[\"]\", 'x', # c ]\n  2]", "t.c": "{ d = \"}\", e = [1] }", "t.c.d": `"}"`, "t.c.e": "[1]"} {
		v, ok := s.Values[path]
		if got := doc[v.Start:v.End]; !ok || got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if !s.Values["t.c"].Inline || s.Values["b"].Inline {
		t.Error("inline tables not told apart")
	}
	if end := s.HeaderEnd["t"]; doc[end-3:end+1] != "# h\n" {
		t.Errorf("header [t] ends at %d: %q", end, doc[:end])
	}
}
