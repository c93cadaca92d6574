package health

import (
	"strings"
	"testing"
)

// TestHealthWarnings: each of the troubleshooting warnings fires once, after
// StuckSteps consecutive steps, and a healthy step resets the count.
func TestHealthWarnings(t *testing.T) {
	var h State
	zeros := []float32{0, 0, 0, 0}
	for i := 1; i < StuckSteps; i++ {
		if w := h.Observe(zeros, 1); len(w) != 0 {
			t.Fatalf("warned after %d steps: %v", i, w)
		}
	}
	if w := h.Observe(zeros, 1); len(w) != 1 || !strings.Contains(w[0], "reward has been 0.0") {
		t.Fatalf("after %d all-zero steps: %v", StuckSteps, w)
	}
	if w := h.Observe(zeros, 1); len(w) != 0 {
		t.Errorf("warned twice: %v", w)
	}

	h = State{}
	ones := []float32{1, 1}
	for range StuckSteps - 1 {
		h.Observe(ones, 1)
	}
	h.Observe([]float32{1, 0.5}, 0) // a healthy step resets the count
	for range StuckSteps - 1 {
		if w := h.Observe(ones, 1); len(w) != 0 {
			t.Fatalf("warned before %d consecutive steps: %v", StuckSteps, w)
		}
	}
	if w := h.Observe(ones, 1); len(w) != 1 || !strings.Contains(w[0], "1.0") {
		t.Fatalf("all-one rewards: %v", w)
	}

	h = State{}
	mixed := []float32{0.2, 0.2, 0.7, 0.7} // every group constant, groups differ
	var got []string
	for range StuckSteps {
		got = append(got, h.Observe(mixed, 1)...)
	}
	if len(got) != 1 || !strings.Contains(got[0], "all advantages are 0") {
		t.Fatalf("zero-variance groups: %v", got)
	}
}
