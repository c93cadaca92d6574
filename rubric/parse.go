package rubric

import (
	"strings"
	"unicode"
)

// XMLTag returns the text inside the first <tag>...</tag> pair of text, with
// surrounding white space removed, and whether there was one. It is what
// verifiers' XMLParser.parse_answer (verifiers 8d4b33247) takes from one
// assistant message: the first match of <tag>\s*(.*?)\s*</tag> (DOTALL),
// i.e. from the first <tag> to the first </tag> after it, so "<a>x<a>y</a>"
// yields "x<a>y". Think blocks get no special treatment there, so neither
// do they here: a tag inside <think>...</think> is found like any other.
func XMLTag(text, tag string) (string, bool) {
	all := XMLTags(text, tag)
	if len(all) == 0 {
		return "", false
	}
	return all[0], true
}

// XMLTagLast is XMLTag's last pair instead of its first: what verifiers'
// XMLParser.parse_answer returns when handed a bare string (parse with
// last=True) rather than messages.
func XMLTagLast(text, tag string) (string, bool) {
	all := XMLTags(text, tag)
	if len(all) == 0 {
		return "", false
	}
	return all[len(all)-1], true
}

// XMLTags returns the stripped contents of every <tag>...</tag> pair, left
// to right, each from the first unused <tag> to the first </tag> after it.
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

// BoxedAnswer returns the contents of the last \boxed{...} in text, braces
// balanced, and whether it was complete: verifiers' extract_boxed_answer
// with strict=True (verifiers 8d4b33247), which MathRubric uses. Only the
// last "\boxed{" counts, so when it is unclosed (a truncated completion)
// there is no answer even if an earlier box closed; \fbox is not read.
func BoxedAnswer(text string) (string, bool) {
	i := strings.LastIndex(text, `\boxed{`)
	if i < 0 {
		return "", false
	}
	start := i + len(`\boxed{`)
	if end := matchingBrace(text, start-1, len(text)); end >= 0 {
		return text[start:end], true
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
