package optim

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

type adamwGolden struct {
	Config struct {
		LR          float64    `json:"lr"`
		Betas       [2]float64 `json:"betas"`
		Eps         float64    `json:"eps"`
		WeightDecay float64    `json:"weight_decay"`
		MaxGradNorm float64    `json:"max_grad_norm"`
		WarmupSteps int        `json:"warmup_steps"`
	} `json:"config"`
	Init        [][]float32   `json:"init"`
	Grads       [][][]float32 `json:"grads"`
	GradNorms   []float64     `json:"grad_norms"`
	ParamsAfter [][][]float64 `json:"params_after"`
}

func loadAdamWGolden(t *testing.T) adamwGolden {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "golden", "adamw.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g adamwGolden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func newGoldenOptimizer(t *testing.T, be kernels.Backend, g adamwGolden) (*AdamW, []Param) {
	var params []Param
	for i, init := range g.Init {
		p := Param{Name: "p" + string(rune('0'+i)), Value: be.Alloc(kernels.F32, len(init)), Grad: be.Alloc(kernels.F32, len(init))}
		be.Upload(p.Value, init)
		params = append(params, p)
	}
	cfg := DefaultConfig()
	cfg.LR, cfg.Betas, cfg.Eps, cfg.WeightDecay = g.Config.LR, g.Config.Betas, g.Config.Eps, g.Config.WeightDecay
	cfg.MaxGradNorm, cfg.WarmupSteps = g.Config.MaxGradNorm, g.Config.WarmupSteps
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	o, err := NewAdamW(be, params, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o, params
}

// TestAdamWMatchesTorch replays torch.optim.AdamW + clip_grad_norm_ + a
// warm-up schedule (testdata/reference/adamw.py) for five steps; parameters
// must agree to 1e-6 relative and grad norms to 1e-6.
func TestAdamWMatchesTorch(t *testing.T) {
	g := loadAdamWGolden(t)
	be := cpu.New()
	o, params := newGoldenOptimizer(t, be, g)
	for s, grads := range g.Grads {
		for i, p := range params {
			be.Upload(p.Grad, grads[i])
		}
		st, err := o.Update(len(g.Grads))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(st.GradNorm-g.GradNorms[s]) > 1e-6*g.GradNorms[s] {
			t.Errorf("step %d: grad norm %v, want %v", s+1, st.GradNorm, g.GradNorms[s])
		}
		for i, p := range params {
			got := make([]float32, p.Value.Len())
			be.Download(got, p.Value)
			for j, want := range g.ParamsAfter[s][i] {
				if math.Abs(float64(got[j])-want) > 1e-6*math.Max(1, math.Abs(want)) {
					t.Fatalf("step %d param %d[%d] = %v, want %v", s+1, i, j, got[j], want)
				}
			}
		}
	}
}

// TestAdamWStateRoundTrip: stopping after 2 steps, saving, restoring into a
// fresh optimizer and continuing gives bit-identical parameters.
func TestAdamWStateRoundTrip(t *testing.T) {
	g := loadAdamWGolden(t)
	run := func(o *AdamW, params []Param, from, to int) {
		for s := from; s < to; s++ {
			for i, p := range params {
				o.be.Upload(p.Grad, g.Grads[s][i])
			}
			if _, err := o.Update(len(g.Grads)); err != nil {
				t.Fatal(err)
			}
		}
	}
	be := cpu.New()
	ref, refParams := newGoldenOptimizer(t, be, g)
	run(ref, refParams, 0, len(g.Grads))

	o, params := newGoldenOptimizer(t, be, g)
	run(o, params, 0, 2)
	path := filepath.Join(t.TempDir(), "optimizer.safetensors")
	if err := o.SaveState(path); err != nil {
		t.Fatal(err)
	}
	saved := make([][]float32, len(params))
	for i, p := range params {
		saved[i] = make([]float32, p.Value.Len())
		be.Download(saved[i], p.Value)
	}
	o2, params2 := newGoldenOptimizer(t, be, g)
	for i, p := range params2 {
		be.Upload(p.Value, saved[i])
	}
	if err := o2.LoadState(path); err != nil {
		t.Fatal(err)
	}
	run(o2, params2, 2, len(g.Grads))
	for i := range params2 {
		a, b := make([]float32, params2[i].Value.Len()), make([]float32, refParams[i].Value.Len())
		be.Download(a, params2[i].Value)
		be.Download(b, refParams[i].Value)
		for j := range a {
			if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
				t.Fatalf("param %d[%d]: resumed %v, uninterrupted %v", i, j, a[j], b[j])
			}
		}
	}
	// A state file for other parameters is refused with a clear error.
	other, _ := NewAdamW(be, []Param{{Name: "q", Value: be.Alloc(kernels.F32, 3), Grad: be.Alloc(kernels.F32, 3)}}, DefaultConfig())
	if err := other.LoadState(path); err == nil || !strings.Contains(err.Error(), `"q.exp_avg" is missing`) {
		t.Errorf("mismatched state: %v", err)
	}
}

func TestAdamWRefusesNaNGradient(t *testing.T) {
	be := cpu.New()
	p := Param{Name: "w", Value: be.Alloc(kernels.F32, 2), Grad: be.Alloc(kernels.F32, 2)}
	be.Upload(p.Value, []float32{1, 2})
	be.Upload(p.Grad, []float32{float32(math.NaN()), 0})
	o, _ := NewAdamW(be, []Param{p}, DefaultConfig())
	if _, err := o.Update(10); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Fatalf("NaN gradient: %v", err)
	}
	v := make([]float32, 2)
	be.Download(v, p.Value)
	if v[0] != 1 || v[1] != 2 {
		t.Errorf("parameters changed after a NaN gradient: %v", v)
	}
}
