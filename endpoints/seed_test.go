package endpoints

import (
	"encoding/json"
	"testing"
)

// TestSeedWireForm: a seed is written as the int64 of its bits (in vLLM's
// range) and read back, signed or unsigned, to the same uint64.
func TestSeedWireForm(t *testing.T) {
	for _, c := range []struct {
		seed Seed
		wire string
	}{{0, "0"}, {12345, "12345"}, {1<<63 - 1, "9223372036854775807"}, {1 << 63, "-9223372036854775808"}, {1<<64 - 1, "-1"}} {
		b, err := json.Marshal(c.seed)
		if err != nil || string(b) != c.wire {
			t.Errorf("Marshal(%d) = %s, %v; want %s", uint64(c.seed), b, err, c.wire)
		}
		var back Seed
		if err := json.Unmarshal(b, &back); err != nil || back != c.seed {
			t.Errorf("Unmarshal(%s) = %d, %v; want %d", b, uint64(back), err, uint64(c.seed))
		}
	}
	var s Seed
	if err := json.Unmarshal([]byte("18446744073709551615"), &s); err != nil || s != 1<<64-1 {
		t.Errorf("unsigned form: %d, %v", uint64(s), err)
	}
	if err := json.Unmarshal([]byte("1.5"), &s); err == nil {
		t.Error("a fractional seed was accepted")
	}
}
