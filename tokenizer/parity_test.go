package tokenizer

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestParityWithHF compares every corpus line, for every variant, with the
// ids HF tokenizers (Rust) produced (scripts/tokenizer-parity/reference.mjs).
func TestParityWithHF(t *testing.T) {
	lines := corpus(t)
	for name, tok := range variants(t) {
		t.Run(name, func(t *testing.T) {
			refs := readLines(t, filepath.Join(testdata, "ref-"+name+".jsonl.gz"))
			if len(refs) != len(lines) {
				t.Fatalf("ref-%s has %d lines, corpus %d: regenerate the references", name, len(refs), len(lines))
			}
			bad := 0
			for i, s := range lines {
				var want []int32
				if err := json.Unmarshal(refs[i], &want); err != nil {
					t.Fatalf("ref-%s line %d: %v", name, i+1, err)
				}
				var got []int32
				if name == "llama3" {
					got = tok.EncodeWithSpecialTokens(s)
				} else {
					got = tok.Encode(s)
				}
				if !slices.Equal(got, want) {
					bad++
					if bad <= 5 {
						t.Errorf("line %d %s:\n%s", i+1, quoteShort(s), diffIDs(tok, got, want))
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d corpus lines differ from HF tokenizers", name, bad, len(lines))
			}
		})
	}
}

func quoteShort(s string) string {
	if len(s) > 120 {
		return fmt.Sprintf("%q…(%d bytes)", s[:120], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// diffIDs shows where two id sequences part, with the tokens around it.
func diffIDs(tok *Tokenizer, got, want []int32) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	show := func(ids []int32) string {
		lo, hi := max(0, i-3), min(len(ids), i+5)
		var parts []string
		for _, id := range ids[lo:hi] {
			s, _ := tok.Token(id)
			parts = append(parts, fmt.Sprintf("%d%q", id, s))
		}
		return fmt.Sprint(parts)
	}
	return fmt.Sprintf("first difference at index %d (got %d ids, want %d)\n got  %s\n want %s", i, len(got), len(want), show(got), show(want))
}
