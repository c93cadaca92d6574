package rubric

import (
	"strings"
	"unicode"
)

// XMLTag returns the text inside the last <tag>...</tag> pair of text, with
// surrounding whitespace removed, and whether there was one. It matches
// verifiers' XMLParser.parse_answer, which searches the regular expression
// <tag>\s*(.*?)\s*</tag> (DOTALL) and keeps the last match: pairs are found
// left to right, each from the first unused <tag> to the first </tag>
// after it, so "<a>x<a>y</a>" yields "x<a>y".
func XMLTag(text, tag string) (string, bool) {
	all := XMLTags(text, tag)
	if len(all) == 0 {
		return "", false
	}
	return all[len(all)-1], true
}

// XMLTags returns the stripped contents of every <tag>...</tag> pair, in the
// order XMLTag scans them.
func XMLTags(text, tag string) []string {
	open, close := "<"+tag+">", "</"+tag+">"
	var out []string
	for pos := 0; ; {
		o := strings.Index(text[pos:], open)
		if o < 0 {
			return out
		}
		start := pos + o + len(open)
		c := strings.Index(text[start:], close)
		if c < 0 {
			return out
		}
		out = append(out, PyStrip(text[start:start+c]))
		pos = start + c + len(close)
	}
}

// HashAnswer returns the GSM8K final answer: the text after "####" (up to a
// second "####", if any), trimmed, as verifiers' extract_hash_answer does.
func HashAnswer(text string) (string, bool) {
	parts := strings.SplitN(text, "####", 3)
	if len(parts) < 2 {
		return "", false
	}
	return PyStrip(parts[1]), true
}

// BoxedAnswer returns the contents of the last \boxed{...} or \fbox{...} in
// text, braces balanced, and whether one was found complete. The last one
// counts because models restate and correct themselves; an unclosed box
// (a truncated completion) is no answer.
func BoxedAnswer(text string) (string, bool) {
	start := -1
	for _, cmd := range []string{`\boxed{`, `\fbox{`} {
		if i := strings.LastIndex(text, cmd); i >= 0 && i+len(cmd) > start {
			start = i + len(cmd)
		}
	}
	if start < 0 {
		return "", false
	}
	depth := 1
	for i := start; i < len(text); i++ {
		switch text[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return text[start:i], true
			}
		}
	}
	return "", false
}

// StripThink drops the reasoning of a thinking model: it returns what comes
// after the last "</think>" (all of text when there is none), trimmed, as
// verifiers' ThinkParser does.
func StripThink(text string) string {
	if i := strings.LastIndex(text, "</think>"); i >= 0 {
		text = text[i+len("</think>"):]
	}
	return PyStrip(text)
}

// PyStrip trims what Python's str.strip() trims: Unicode white space,
// which, unlike Go's unicode.IsSpace, includes the separators U+001C..U+001F.
func PyStrip(s string) string {
	return strings.TrimFunc(s, isPySpace)
}

func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}
