package optim

import (
	"math"
	"testing"
)

func TestLRSchedule(t *testing.T) {
	c := DefaultConfig()
	c.WarmupSteps, c.Schedule, c.MinLRRatio = 4, "cosine", 0.1
	if got := c.LRAt(1, 104); math.Abs(got-c.LR/4) > 1e-15 {
		t.Errorf("warm-up step 1: %v", got)
	}
	if got := c.LRAt(54, 104); math.Abs(got-c.LR*0.55) > 1e-12 {
		t.Errorf("cosine midpoint: %v, want %v", got, c.LR*0.55)
	}
	if got := c.LRAt(104, 104); math.Abs(got-c.LR*0.1) > 1e-15 {
		t.Errorf("cosine end: %v", got)
	}
}
