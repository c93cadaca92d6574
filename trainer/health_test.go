package trainer

import (
	"strings"
	"testing"
)

// TestHealthWarnings: each of the troubleshooting warnings fires once, after
// stuckSteps consecutive steps, and a healthy step resets the count.
func TestHealthWarnings(t *testing.T) {
	var h healthState
	zeros := []float32{0, 0, 0, 0}
	for i := 1; i < stuckSteps; i++ {
		if w := h.observe(zeros, 1); len(w) != 0 {
			t.Fatalf("warned after %d steps: %v", i, w)
		}
	}
	if w := h.observe(zeros, 1); len(w) != 1 || !strings.Contains(w[0], "reward has been 0.0") {
		t.Fatalf("after %d all-zero steps: %v", stuckSteps, w)
	}
	if w := h.observe(zeros, 1); len(w) != 0 {
		t.Errorf("warned twice: %v", w)
	}

	h = healthState{}
	ones := []float32{1, 1}
	for range stuckSteps - 1 {
		h.observe(ones, 1)
	}
	h.observe([]float32{1, 0.5}, 0) // a healthy step resets the count
	for range stuckSteps - 1 {
		if w := h.observe(ones, 1); len(w) != 0 {
			t.Fatalf("warned before %d consecutive steps: %v", stuckSteps, w)
		}
	}
	if w := h.observe(ones, 1); len(w) != 1 || !strings.Contains(w[0], "1.0") {
		t.Fatalf("all-one rewards: %v", w)
	}

	h = healthState{}
	mixed := []float32{0.2, 0.2, 0.7, 0.7} // every group constant, groups differ
	var got []string
	for range stuckSteps {
		got = append(got, h.observe(mixed, 1)...)
	}
	if len(got) != 1 || !strings.Contains(got[0], "all advantages are 0") {
		t.Fatalf("zero-variance groups: %v", got)
	}
}
