package lora

import "testing"

// TestParamCountMatchesNew: the count reported before allocation is the
// adapter New allocates, on a dense model and on a mixture of experts
// with its experts and routers adapted.
func TestParamCountMatchesNew(t *testing.T) {
	for _, tc := range []struct {
		model string
		cfg   Config
	}{
		{"qwen3-tiny", Config{Rank: 4, Alpha: 8, TargetModules: AllModules}},
		{"qwen3-tiny", Config{Rank: 3, Alpha: 8, TargetModules: []string{"v_proj", "q_proj"}}},
		{"qwen3-moe-tiny-dense", Config{Rank: 4, Alpha: 8, TargetModules: AllModules}},
		{"qwen3-moe-tiny-dense", Config{Rank: 2, Alpha: 8, TargetModules: []string{"gate", "up_proj", "k_proj"}}},
	} {
		m := loadModel(t, tc.model)
		a, err := New(m, tc.cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tc.cfg.ParamCount(m.Config)
		if err != nil || got != int64(a.NumParams()) {
			t.Errorf("%s %v: ParamCount %d (%v), New allocated %d", tc.model, tc.cfg.TargetModules, got, err, a.NumParams())
		}
		a.Free()
	}
}
