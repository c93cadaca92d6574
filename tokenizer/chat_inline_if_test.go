package tokenizer

import "testing"

// TestInlineIf renders conditional expressions inside brackets, which
// gonja cannot parse by itself, and compares with Jinja2 3.1.6's output of
// the same templates (a="A", b="B", t=True, f=False, m={}).
func TestInlineIf(t *testing.T) {
	vars := map[string]any{"a": "A", "b": "B", "t": true, "f": false, "m": map[string]any{}}
	for src, want := range map[string]string{
		`{{ (a if t else b) + "!" }}`:                            "A!",
		`{{ (a if f else b) + "!" }}`:                            "B!",
		`{{ ((a if f else "if") ~ (b if t)) }}`:                  "ifB",
		`{{ ("x" if (a if f else "") else "y") }}`:               "y",
		`{{ [a if t else b, b if f else "else"] | join(",") }}`:  "A,else",
		`{{ [1, 2, 3][0 if f else 2] }}`:                         "3",
		`{% set v = (a if t else b) %}{{ v }}`:                   "A",
		`{{ "a" ~ (m.k if m.k is defined else "none") }}`:        "anone",
		`{{ (a if f) is defined }}`:                              "False",
		"{{ (a if t else b) }}\r\n{{ 'if' }}\n":                  "A\nif",
		`{{ a if t else b }}{% if (f) %}x{% else %}y{% endif %}`: "Ay",
	} {
		got, err := RenderChatTemplate(src, nil, ChatOptions{Vars: vars}, nil)
		if err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", src, got, err, want)
		}
	}
}
