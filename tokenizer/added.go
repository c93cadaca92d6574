package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is an entry of tokenizer.json's added_tokens: matched as a
// whole in the text before pre-tokenization, so "<|im_end|>" typed inside a
// prompt becomes one id, as in HF tokenizers.
type addedToken struct {
	id      int32
	content string
	lstrip  bool // swallow whitespace on its left
	rstrip  bool // swallow whitespace on its right
	special bool
}

// addedMatcher finds added tokens with leftmost-longest semantics (HF uses
// Aho-Corasick with MatchKind::LeftmostLongest).
type addedMatcher struct {
	first  [256]bool          // bytes that can start a token
	byByte [256][]*addedToken // candidates per first byte, longest first
}

func newAddedMatcher(toks []*addedToken) *addedMatcher {
	if len(toks) == 0 {
		return nil
	}
	m := &addedMatcher{}
	for _, t := range toks {
		b := t.content[0]
		m.first[b] = true
		m.byByte[b] = append(m.byByte[b], t)
	}
	for b := range m.byByte {
		sort.SliceStable(m.byByte[b], func(i, j int) bool {
			return len(m.byByte[b][i].content) > len(m.byByte[b][j].content)
		})
	}
	return m
}

// segment is a stretch of input: either plain text or one added token.
type segment struct {
	text  string
	token *addedToken // nil for text
}

// split cuts text into plain-text segments and added tokens. Empty text
// segments are dropped.
func (m *addedMatcher) split(text string, segs []segment) []segment {
	m.each(text, func(s segment) bool {
		segs = append(segs, s)
		return true
	})
	return segs
}

// each calls f with split's segments in order, without collecting them,
// until f returns false.
func (m *addedMatcher) each(text string, f func(segment) bool) {
	if m == nil {
		f(segment{text: text})
		return
	}
	prev := 0 // start of the pending plain text
	for i := 0; i < len(text); i++ {
		if !m.first[text[i]] {
			continue
		}
		var hit *addedToken
		for _, t := range m.byByte[text[i]] {
			if strings.HasPrefix(text[i:], t.content) {
				hit = t
				break
			}
		}
		if hit == nil {
			continue
		}
		start, end := i, i+len(hit.content)
		if hit.lstrip {
			start = prev + len(strings.TrimRightFunc(text[prev:start], unicode.IsSpace))
		}
		if hit.rstrip {
			end = len(text) - len(strings.TrimLeftFunc(text[end:], unicode.IsSpace))
		}
		if start > prev && !f(segment{text: text[prev:start]}) {
			return
		}
		if !f(segment{token: hit}) {
			return
		}
		prev = end
		i = end - 1
	}
	if prev < len(text) {
		f(segment{text: text[prev:]})
	}
}

// validAddedContent reports whether content can be matched at all.
func validAddedContent(s string) bool { return s != "" && utf8.ValidString(s) }
