package sampler

import (
	"math"
	"strings"
	"testing"
)

func TestParamsValidate(t *testing.T) {
	bad := map[string]func(p *Params){
		"temperature = -1":  func(p *Params) { p.Temperature = -1 },
		"top_p = 0":         func(p *Params) { p.TopP = 0 },
		"top_p = 1.5":       func(p *Params) { p.TopP = 1.5 },
		"top_k = -2":        func(p *Params) { p.TopK = -2 },
		"min_p = 2":         func(p *Params) { p.MinP = 2 },
		"max_tokens = -1":   func(p *Params) { p.MaxTokens = -1 },
		"stop[1] is empty":  func(p *Params) { p.Stop = []string{"x", ""} },
		"temperature = NaN": func(p *Params) { p.Temperature = math.NaN() },
	}
	for want, edit := range bad {
		p := DefaultParams()
		edit(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want error containing %q, got %v", want, err)
		}
	}
	p := DefaultParams()
	if err := p.Validate(); err != nil {
		t.Errorf("DefaultParams: %v", err)
	}
}
