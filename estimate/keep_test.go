package estimate

import (
	"strings"
	"testing"
)

// TestKeepSampler: the sampler is kept exactly when resident + the larger
// sampling phase (sampling or eval) + training fit in the free memory less
// the KV plan's headroom; unknown memory keeps it.
func TestKeepSampler(t *testing.T) {
	e := &Estimate{}
	e.add(PhaseResident, "base weights", 1000, "")
	e.add(PhaseSampling, "KV cache", 3000, "")
	e.add(PhaseSampling, "logits", 500, "")
	e.add(PhaseEval, "KV cache eval", 4000, "") // the larger of the two sampling phases
	e.add(PhaseTraining, "activations", 5000, "")
	const need = 1000 + 4000 + 5000
	// av·(1 − headroom) = need exactly: 10000 / 0.95, rounded up so the
	// float product is not below need.
	headroom := kvHeadroom
	fits := int64(float64(need)/(1-headroom)) + 1
	for _, c := range []struct {
		av   *Available
		keep bool
		why  string
	}{
		{nil, true, "free memory unknown"},
		{&Available{Bytes: 1 << 40}, true, "free memory unknown"},
		{&Available{Bytes: fits, Known: true}, true, "kept across steps: resident 1000 B + sampling 3.9 KiB + training 4.9 KiB"},
		{&Available{Bytes: fits - 2, Known: true}, false, "freed before each policy update"},
		{&Available{Bytes: need, Known: true}, false, "exceed"},
	} {
		k := e.KeepSampler(c.av)
		if k.Keep != c.keep || k.Bytes != need || !strings.Contains(k.Why, c.why) {
			t.Errorf("available %+v: %+v; want keep %v, %d bytes, a line with %q", c.av, k, c.keep, need, c.why)
		}
	}
}
