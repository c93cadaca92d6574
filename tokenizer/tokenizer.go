package tokenizer

import (
	"sync"

	"golang.org/x/text/unicode/norm"
)

// Tokenizer encodes text to token ids and back. It is safe for concurrent
// use.
type Tokenizer struct {
	normalizer []norm.Form // applied in order to text between added tokens
	splitters  []splitter  // pre-tokenizer stages, applied in order
	model      *bpe
	added      *addedMatcher
	addedByID  map[int32]*addedToken

	vocab     []string // id → raw bytes ("" for holes in the id space)
	hasID     []bool
	vocabSize int

	prefix, suffix []int32 // what the post-processor puts around a sequence

	cfg tokConfig // from tokenizer_config.json and generation_config.json

	longestOnce sync.Once
	longest     int // longestPiece's value
}

// tokConfig is what tokenizer_config.json (and generation_config.json) add.
type tokConfig struct {
	eos          []int32
	bos, pad     int32
	hasBOS       bool
	hasPad       bool
	addBOS       bool
	eosToken     string
	bosToken     string
	chatTemplate string
	// templateSource is the tokenizer_config.json path the template came
	// from ("" when built from bytes).
	templateSource string
	templates      map[string]string // named templates, when the file has a list
}

// Encode returns the ids of text, with added and special tokens written in
// the text (such as "<|im_end|>") matched as single ids. Nothing is added
// around the text: this is HF's encode(text, add_special_tokens=False), the
// form apply_chat_template(tokenize=True) uses.
func (t *Tokenizer) Encode(text string) []int32 {
	return t.appendEncode(nil, text)
}

// EncodeWithSpecialTokens is HF's encode(text) with add_special_tokens=True:
// Encode plus what the post-processor adds (Llama 3 prepends
// <|begin_of_text|>; Qwen adds nothing).
func (t *Tokenizer) EncodeWithSpecialTokens(text string) []int32 {
	out := append([]int32(nil), t.prefix...)
	out = t.appendEncode(out, text)
	return append(out, t.suffix...)
}

func (t *Tokenizer) appendEncode(out []int32, text string) []int32 {
	var segBuf [8]segment
	var pieceBuf [64]string
	for _, seg := range t.added.split(text, segBuf[:0]) {
		if seg.token != nil {
			out = append(out, seg.token.id)
			continue
		}
		s := seg.text
		for _, f := range t.normalizer {
			if !f.IsNormalString(s) {
				s = f.String(s)
			}
		}
		pieces := append(pieceBuf[:0], s)
		for _, sp := range t.splitters {
			var next []string
			if len(pieces) == 1 {
				next = sp.split(pieces[0], pieceBuf[:0])
			} else {
				for _, p := range pieces {
					next = sp.split(p, next)
				}
			}
			pieces = next
		}
		for _, p := range pieces {
			out = t.model.encode(p, out)
		}
	}
	return out
}

// Decode returns the text of ids: the exact bytes the tokens stand for, with
// added tokens written out. Ids outside the vocabulary are skipped, as HF
// does. A sequence cut inside a multi-byte character yields its partial
// UTF-8 bytes (HF would show U+FFFD); joining the pieces of consecutive
// calls therefore restores the text exactly.
func (t *Tokenizer) Decode(ids []int32) string {
	n := 0
	for _, id := range ids {
		if id >= 0 && int(id) < len(t.vocab) {
			n += len(t.vocab[id])
		}
	}
	buf := make([]byte, 0, n)
	for _, id := range ids {
		if id >= 0 && int(id) < len(t.vocab) {
			buf = append(buf, t.vocab[id]...)
		}
	}
	return string(buf)
}

// Token returns the text (raw bytes) of one id.
func (t *Tokenizer) Token(id int32) (string, bool) {
	if id < 0 || int(id) >= len(t.hasID) || !t.hasID[id] {
		return "", false
	}
	return t.vocab[id], true
}

// TokenID returns the id of a token given as its text (raw bytes, e.g.
// " the" or "<|im_end|>"), not its byte-level spelling ("Ġthe").
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	for _, a := range t.addedByID {
		if a.content == s {
			return a.id, true
		}
	}
	id, ok := t.model.ids[s]
	return id, ok
}

// VocabSize is one more than the largest id, added tokens included; the
// model's embedding matrix may be larger (padded).
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// IsSpecial reports whether id is an added token marked special (such as
// <|im_end|>), which callers usually hide when showing text.
func (t *Tokenizer) IsSpecial(id int32) bool {
	a, ok := t.addedByID[id]
	return ok && a.special
}

// EOS returns the ids that end generation: tokenizer_config.json's
// eos_token first, then any other eos_token_id from generation_config.json
// (Qwen3 lists both <|im_end|> and <|endoftext|>).
func (t *Tokenizer) EOS() []int32 { return append([]int32(nil), t.cfg.eos...) }

// BOS returns the beginning-of-sequence id, if the tokenizer has one.
func (t *Tokenizer) BOS() (int32, bool) { return t.cfg.bos, t.cfg.hasBOS }

// AddBOS reports whether EncodeWithSpecialTokens starts with the BOS id.
func (t *Tokenizer) AddBOS() bool { return t.cfg.addBOS }

// PadID returns the padding id from tokenizer_config.json's pad_token, if
// any.
func (t *Tokenizer) PadID() (int32, bool) { return t.cfg.pad, t.cfg.hasPad }
