package tokenizer

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// splitter cuts text into pre-tokens (pieces that BPE never merges across).
// Every byte of text ends up in exactly one piece, in order.
type splitter interface {
	split(text string, pieces []string) []string
}

// The split patterns of the model families we special-case. They differ
// in how many digits one piece may hold and, from Qwen3.5 on, in whether
// combining marks (\p{M}) belong to words: Qwen3.5's pattern lets a letter
// run absorb them (so "e\u0301", Devanagari vowel signs and Thai tone marks
// stay inside their word) where Qwen2/3's cut them off as punctuation.
const (
	qwenPattern   = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen35Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// gpt2Pattern is what the ByteLevel pre-tokenizer splits with when its
	// use_regex is true.
	gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// newSplitter returns the fast scanner for a pattern it knows and a regexp2
// matcher for any other.
func newSplitter(pattern string) (splitter, error) {
	switch pattern {
	case qwenPattern:
		return &scanner{maxDigits: 1}, nil
	case qwen35Pattern:
		return &scanner{maxDigits: 1, marksInWords: true}, nil
	case llama3Pattern:
		return &scanner{maxDigits: 3}, nil
	}
	return newRegexSplitter(pattern)
}

// Rune classes as the Oniguruma engine inside HF tokenizers sees them.
const (
	clsOther = iota
	clsLetter
	clsNumber
	clsSpace
	// clsMark is \p{M}: "other" for the Qwen2/3 and Llama 3 patterns, part
	// of a word for Qwen3.5's (scanner.class decides).
	clsMark
)

var asciiClass [128]uint8

func init() {
	for r := 0; r < 128; r++ {
		asciiClass[r] = classOf(rune(r))
	}
}

// classOf: \s is White_Space (which includes U+0085, and excludes U+FEFF
// and U+180E) — Go's unicode.IsSpace is exactly that set.
func classOf(r rune) uint8 {
	switch {
	case unicode.IsLetter(r):
		return clsLetter
	case unicode.IsNumber(r):
		return clsNumber
	case unicode.IsSpace(r):
		return clsSpace
	case unicode.IsMark(r):
		return clsMark
	}
	return clsOther
}

// runeAt decodes the rune at byte offset i; invalid UTF-8 comes back as
// RuneError of width 1 and is classed as "other", so arbitrary bytes still
// encode (the byte-level BPE can represent any byte).
func runeAt(s string, i int) (rune, int, uint8) {
	c := s[i]
	if c < utf8.RuneSelf {
		return rune(c), 1, asciiClass[c]
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && w == 1 {
		return r, 1, clsOther
	}
	return r, w, classOf(r)
}

// scanner implements qwenPattern (maxDigits 1), llama3Pattern (maxDigits
// 3) and qwen35Pattern (maxDigits 1, marksInWords) by hand: a
// leftmost-first alternation, tried in order.
//
// Qwen3.5's pattern needs no rule of its own: with marks counted as
// letters its word rule [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ is the letter rule,
// and its punctuation class [^\s\p{L}\p{M}\p{N}] is "other". (The word
// rule's optional prefix may itself be a mark, but a mark there is
// followed by the same run the mark would start, so the piece is the same.)
type scanner struct {
	maxDigits    int
	marksInWords bool
}

// at is runeAt with the scanner's view of marks.
func (sc *scanner) at(s string, i int) (rune, int, uint8) {
	r, w, c := runeAt(s, i)
	if c == clsMark {
		c = clsOther
		if sc.marksInWords {
			c = clsLetter
		}
	}
	return r, w, c
}

func (sc *scanner) split(text string, pieces []string) []string {
	for i := 0; i < len(text); {
		end := sc.match(text, i)
		pieces = append(pieces, text[i:end])
		i = end
	}
	return pieces
}

func lowerASCII(c byte) byte { return c | 0x20 }

// match returns the end of the piece that starts at byte offset i.
func (sc *scanner) match(s string, i int) int {
	n := len(s)
	r0, w0, c0 := sc.at(s, i)

	// (?i:'s|'t|'re|'ve|'m|'ll|'d) — ASCII case folding only: HF does not
	// fold U+017F (ſ) to s.
	if r0 == '\'' && i+1 < n {
		switch lowerASCII(s[i+1]) {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < n && lowerASCII(s[i+2]) == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < n && lowerASCII(s[i+2]) == 'l' {
				return i + 3
			}
		}
	}

	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0 == clsLetter {
		return sc.run(s, i, clsLetter)
	}
	if c0 != clsNumber && r0 != '\r' && r0 != '\n' && i+w0 < n {
		if _, _, c1 := sc.at(s, i+w0); c1 == clsLetter {
			return sc.run(s, i+w0, clsLetter)
		}
	}

	// \p{N} or \p{N}{1,3}
	if c0 == clsNumber {
		j := i + w0
		for k := 1; k < sc.maxDigits && j < n; k++ {
			_, w, c := sc.at(s, j)
			if c != clsNumber {
				break
			}
			j += w
		}
		return j
	}

	//  ?[^\s\p{L}\p{N}]+[\r\n]*
	start := -1
	if c0 == clsOther {
		start = i
	} else if r0 == ' ' && i+1 < n {
		if _, _, c1 := sc.at(s, i+1); c1 == clsOther {
			start = i + 1
		}
	}
	if start >= 0 {
		j := sc.run(s, start, clsOther)
		for j < n && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}

	// c0 is whitespace: \s*[\r\n]+ | \s+(?!\S) | \s+
	j, lastNL, lastStart := i, -1, i
	for j < n {
		r, w, c := sc.at(s, j)
		if c != clsSpace {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = j + w
		}
		lastStart = j
		j += w
	}
	switch {
	case lastNL >= 0: // \s*[\r\n]+ ends at the run's last line break
		return lastNL
	case j == n: // \s+(?!\S) at the end of text takes the whole run
		return j
	case lastStart > i: // \s+(?!\S) leaves the last space for the next piece
		return lastStart
	}
	return j // \s+: a single space before a non-space
}

// run returns the end of the run of runes of class cls starting at i.
func (sc *scanner) run(s string, i int, cls uint8) int {
	for i < len(s) {
		_, w, c := sc.at(s, i)
		if c != cls {
			break
		}
		i += w
	}
	return i
}

// regexSplitter is the general path: HF's Split with behavior "Isolated"
// keeps both the matches and the text between them as pieces.
type regexSplitter struct{ re *regexp2.Regexp }

func newRegexSplitter(pattern string) (*regexSplitter, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("split pattern %q: %v", pattern, err)
	}
	return &regexSplitter{re: re}, nil
}

func (rs *regexSplitter) split(text string, pieces []string) []string {
	if text == "" {
		return pieces
	}
	// regexp2 reports rune indices; map them back to byte offsets (an
	// invalid byte counts as one rune, as in []rune(text)).
	offs := make([]int, 0, len(text)+1)
	for i := 0; i < len(text); {
		offs = append(offs, i)
		_, w := utf8.DecodeRuneInString(text[i:])
		i += w
	}
	offs = append(offs, len(text))
	prev := 0
	m, err := rs.re.FindRunesMatch([]rune(text))
	for err == nil && m != nil {
		a, b := offs[m.Index], offs[m.Index+m.Length]
		if a > prev {
			pieces = append(pieces, text[prev:a])
		}
		if b > a {
			pieces = append(pieces, text[a:b])
		}
		prev = b
		m, err = rs.re.FindNextMatch(m)
	}
	if prev < len(text) {
		pieces = append(pieces, text[prev:])
	}
	return pieces
}
