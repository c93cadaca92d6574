package tomlschema

import "testing"

// TestEditDistance against values worked out by hand (OSA distance).
func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{
		{"kitten", "sitting", 3}, {"", "abc", 3}, {"abc", "abc", 0},
		{"ca", "ac", 1}, {"max_tokenz", "max_tokens", 1}, {"batchsize", "batch_size", 1},
		{"ca", "abc", 3}, // OSA: no edit of a transposed pair (true Damerau gives 2)
	} {
		if d := editDistance(c.a, c.b); d != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, d, c.d)
		}
	}
	if s := Closest("learning-rate", []string{"learning_rate", "lora_alpha"}); s != "learning_rate" {
		t.Errorf("closest dashed = %q", s)
	}
	if s := Closest("zzz", []string{"model", "seed"}); s != "" {
		t.Errorf("closest far = %q", s)
	}
}
