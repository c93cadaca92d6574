package tokenizer

import (
	"path/filepath"
	"testing"
)

var gptossTiny = filepath.Join(testdata, "gptoss", "tiny")

// TestGptOssTinyTokenizer loads the gpt-oss-style directory: harmony's
// special tokens are single tokens at o200k_harmony's positions (less
// 199742), <|return|> is the eos token, and generation_config.json adds
// <|endoftext|> and <|call|> to the stop ids; a rendered turn encodes with
// its special tokens whole and decodes back.
func TestGptOssTinyTokenizer(t *testing.T) {
	tok, err := Load(gptossTiny)
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]int32{"<|endoftext|>": 257, "<|return|>": 260, "<|constrain|>": 261,
		"<|channel|>": 263, "<|start|>": 264, "<|end|>": 265, "<|message|>": 266, "<|call|>": 270} {
		if id, ok := tok.TokenID(s); !ok || id != want {
			t.Errorf("%s: id %d, %v; want %d", s, id, ok, want)
		}
	}
	if got := tok.EOS(); len(got) != 3 || got[0] != 260 || got[1] != 257 || got[2] != 270 {
		t.Errorf("EOS() = %v, want [260 257 270]", got)
	}
	if f := tok.ToolCallFormat(); f != ToolCallsHarmony {
		t.Errorf("ToolCallFormat() = %v, want %v", f, ToolCallsHarmony)
	}
	text := `<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": 1}<|call|>`
	ids := tok.Encode(text)
	specials := 0
	for _, id := range ids {
		if id >= 256 {
			specials++
		}
	}
	if specials != 5 || tok.Decode(ids) != text {
		t.Errorf("%q: %d special tokens (want 5), decodes to %q", text, specials, tok.Decode(ids))
	}
}
