package custom

import (
	"fmt"
	"strings"

	"github.com/grpo-dev/grpo/env"
)

// template is a prompt_template split into literal text and {field}
// placeholders. "{{" and "}}" are literal braces; a brace not around a
// field name ("\boxed{}") is literal too.
type template struct {
	parts []templatePart
}

type templatePart struct {
	text  string
	field string // "" for literal text
}

func isFieldChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func parseTemplate(s string) (*template, error) {
	t := &template{}
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "{{"):
			lit.WriteByte('{')
			i++
		case strings.HasPrefix(s[i:], "}}"):
			lit.WriteByte('}')
			i++
		case s[i] == '{':
			j := i + 1
			for j < len(s) && isFieldChar(s[j]) {
				j++
			}
			if j > i+1 && j < len(s) && s[j] == '}' {
				if lit.Len() > 0 {
					t.parts = append(t.parts, templatePart{text: lit.String()})
					lit.Reset()
				}
				t.parts = append(t.parts, templatePart{field: s[i+1 : j]})
				i = j
				continue
			}
			lit.WriteByte('{')
		default:
			lit.WriteByte(s[i])
		}
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, templatePart{text: lit.String()})
	}
	hasField := false
	for _, p := range t.parts {
		hasField = hasField || p.field != ""
	}
	if !hasField {
		return nil, fmt.Errorf("%q has no {field} placeholder, so every prompt would be the same; write e.g. \"Solve: {question}\"", s)
	}
	return t, nil
}

// render fills the placeholders from a row; a field the row lacks is an
// error naming the row.
func (t *template) render(r env.Row) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.field == "" {
			b.WriteString(p.text)
			continue
		}
		v, err := env.TextField(r, p.field)
		if err != nil {
			return "", fmt.Errorf("%v (prompt_template uses {%s}; write {{%s}} for literal braces)", err, p.field, p.field)
		}
		b.WriteString(v)
	}
	return b.String(), nil
}
