package custom

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
)

// TestAllZeroRubricWeightsIsAnError: a rubric whose every term has weight
// 0 would score every rollout 0; environment.toml is refused at the first
// weight's line, with the fix. One zero weight beside a positive one stays
// allowed (a logged-only term).
func TestAllZeroRubricWeightsIsAnError(t *testing.T) {
	dir := capitalsDir(t)
	zero := strings.Replace(strings.Replace(capitalsTOML, "weight = 0.8", "weight = 0", 1), "weight = 0.2", "weight = 0.0", 1)
	envtest.WriteFile(t, dir, "environment.toml", zero)
	_, err := env.New(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "environment.toml:16: every [[rubric]] term has weight = 0") || !strings.Contains(err.Error(), "e.g. weight = 1.0") {
		t.Errorf("all weights 0: %v", err)
	}
	envtest.WriteFile(t, dir, "environment.toml", strings.Replace(capitalsTOML, "weight = 0.2", "weight = 0", 1))
	if _, err := env.New(dir, nil); err != nil {
		t.Errorf("one weight 0: %v", err)
	}
}
