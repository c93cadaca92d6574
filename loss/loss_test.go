package loss

import (
	"math"
	"strings"
	"testing"
)

func TestAdvantages(t *testing.T) {
	adv, st, err := Advantages([]float32{1, 0, 0.5, 0.5, 0, 1}, 2, ScaleGroup)
	if err != nil {
		t.Fatal(err)
	}
	// Group {1, 0}: mean 0.5, unbiased std √0.5.
	want := float32(0.5 / (math.Sqrt(0.5) + 1e-4))
	if math.Abs(float64(adv[0]-want)) > 1e-6 || adv[2] != 0 || adv[3] != 0 || math.Abs(float64(adv[4]+want)) > 1e-6 {
		t.Errorf("advantages %v", adv)
	}
	if math.Abs(st.FracZeroStd-1.0/3) > 1e-12 {
		t.Errorf("frac zero std %v", st.FracZeroStd)
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		_, _, err := Advantages([]float32{1, bad}, 2, ScaleGroup)
		if err == nil || !strings.Contains(err.Error(), "reward of rollout 1 (example 0, rollout 1") {
			t.Errorf("non-finite reward: %v", err)
		}
	}
	if _, _, err := Advantages([]float32{1, 0, 1}, 2, ScaleNone); err == nil {
		t.Error("ragged groups accepted")
	}
}

func TestLossConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	neg := -0.1
	for want, c := range map[string]Config{
		"loss_type = \"ppo\"":   {Type: "ppo", Epsilon: 0.2},
		"epsilon = 1":           {Type: "dapo", Epsilon: 1},
		"epsilon_high = -0.1":   {Type: "dapo", Epsilon: 0.2, EpsilonHigh: &neg},
		"beta = -1":             {Type: "dapo", Epsilon: 0.2, Beta: -1},
		"scale_rewards = \"x\"": {Type: "dapo", Epsilon: 0.2, ScaleRewards: "x"},
	} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q, got %v", want, err)
		}
	}
}
