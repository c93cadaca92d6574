package tokenizer

import "golang.org/x/text/unicode/norm"

// MinTokens is a lower bound on len(Encode(text)), capped at limit, found
// without encoding: a server refuses a prompt that cannot fit before it
// pays for tokenizing it (a 15 MB prompt costs hundreds of MB to encode).
//
// The bound is honest, so no prompt that fits is refused: each added token
// is one id, and every BPE token covers at most the longest vocabulary
// entry's bytes, so a text segment of n bytes after normalization takes at
// least ceil(n / longest) ids. Normalization can shrink text (NFKC maps the
// 4-byte 𝐀 to "A"), so the normalized length is counted, not the input's.
// The scan stops once the bound reaches limit, so refusing a huge prompt
// reads about limit × longest bytes of it.
func (t *Tokenizer) MinTokens(text string, limit int) int {
	longest := t.longestPiece()
	n := 0
	t.added.each(text, func(seg segment) bool {
		if seg.token != nil {
			n++
			return n < limit
		}
		n += t.minSegmentTokens(seg.text, longest, limit-n)
		return n < limit
	})
	return min(n, limit)
}

// minSegmentTokens bounds the ids of one stretch of plain text, stopping
// at limit.
func (t *Tokenizer) minSegmentTokens(s string, longest, limit int) int {
	switch len(t.normalizer) {
	case 0:
		return ceilDiv(len(s), longest)
	case 1:
		// Counted a segment at a time: no copy of the text is made.
		var it norm.Iter
		it.InitString(t.normalizer[0], s)
		bytes := 0
		for !it.Done() {
			bytes += len(it.Next())
			if bytes/longest >= limit {
				return limit
			}
		}
		return ceilDiv(bytes, longest)
	}
	for _, f := range t.normalizer { // a Sequence: rare; normalize as Encode does
		s = f.String(s)
	}
	return ceilDiv(len(s), longest)
}

// longestPiece is the most bytes one BPE id stands for (at least 1).
func (t *Tokenizer) longestPiece() int {
	t.longestOnce.Do(func() {
		t.longest = 1
		for raw := range t.model.ids {
			t.longest = max(t.longest, len(raw))
		}
	})
	return t.longest
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
