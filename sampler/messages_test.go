package sampler

import (
	"strings"
	"testing"
)

// TestCacheLengthMessagesNameRealSettings: a prompt or a reply that does
// not fit the cache says how its length is set ([sampling] max_tokens,
// the model's max_position_embeddings) and what to shorten, not "raise
// max_len", which is no setting a user has.
func TestCacheLengthMessagesNameRealSettings(t *testing.T) {
	s := newSampler(t, tinyModel(t), nil, Config{Slots: 1, MaxLen: 4})
	_, err := s.Start(make([]int32, 4), DefaultParams())
	q, qerr := s.Start([]int32{1}, DefaultParams())
	if qerr != nil {
		t.Fatal(qerr)
	}
	for what, e := range map[string]error{"long prompt": err, "long reply": q.Append(1, 2, 3, 4)} {
		if e == nil || strings.Contains(e.Error(), "max_len") || !strings.Contains(e.Error(), "[sampling] max_tokens") ||
			!strings.Contains(e.Error(), "max_position_embeddings") || !strings.Contains(e.Error(), "shorten the") {
			t.Errorf("%s: %v", what, e)
		}
	}
}
