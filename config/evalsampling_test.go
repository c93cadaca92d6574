package config

import (
	"testing"

	"github.com/grpo-dev/grpo/sampler"
)

// TestEvalSamplingOverrides: [eval.sampling] lays its keys over the run's
// params; max_tokens 0 and an unset temperature inherit.
func TestEvalSamplingOverrides(t *testing.T) {
	base := sampler.DefaultParams()
	base.MaxTokens, base.Temperature = 100, 0.8
	p := base
	EvalSampling{}.Overrides().Apply(&p)
	if p.MaxTokens != 100 || p.Temperature != 0.8 {
		t.Errorf("unset keys changed the params: %+v", p)
	}
	temp := 0.0
	p = base
	EvalSampling{MaxTokens: 7, Temperature: &temp}.Overrides().Apply(&p)
	if p.MaxTokens != 7 || p.Temperature != 0 {
		t.Errorf("got %+v", p)
	}
}
