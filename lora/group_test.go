package lora

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// ungrouped hides GroupA, so the model runs one shrink GEMM per projection
// over the same parameters.
type ungrouped struct{ model.Adapter }

// TestGroupedShrinkMatchesPerProjection: with the A matrices of q/k/v and
// gate/up stored together (one shrink GEMM per group, one GEMM for the
// group's A gradients) the log-probs and every gradient equal those of the
// per-projection path, for all projections, a mix (q and v only: one
// group of two, gate alone) and no grouped projection at all; and each
// projection's A is a view of its group's buffer at its rows.
func TestGroupedShrinkMatchesPerProjection(t *testing.T) {
	for _, targets := range [][]string{AllModules, {"q_proj", "v_proj", "gate_proj"}, {"o_proj", "down_proj"}} {
		t.Run(strings.Join(targets, ","), func(t *testing.T) {
			m := loadModel(t, "qwen3-tiny")
			cfg := DefaultConfig()
			cfg.Rank, cfg.TargetModules = 3, targets
			ad, err := New(m, cfg, 5)
			if err != nil {
				t.Fatal(err)
			}
			defer ad.Free()
			rng := rand.New(rand.NewPCG(1, 2))
			for _, p := range ad.Params() {
				v := make([]float32, p.Value.Len())
				for i := range v {
					v[i] = float32(rng.NormFloat64() * 0.1)
				}
				m.Backend.Upload(p.Value, v)
			}
			grouped := run(t, m.WithAdapter(ad), ad)
			plain := run(t, m.WithAdapter(ungrouped{ad}), ad)
			for i := range grouped {
				var d, scale float64
				for j := range grouped[i] {
					d = math.Max(d, math.Abs(float64(grouped[i][j]-plain[i][j])))
					scale = math.Max(scale, math.Abs(float64(plain[i][j])))
				}
				if d > 1e-5*(1+scale) {
					t.Errorf("output %d: max |Δ| %g between grouped and per-projection shrink (scale %g)", i, d, scale)
				}
			}
			a, _ := ad.GroupA(0, []model.Proj{model.ProjQ, model.ProjV})
			if (a != nil) != (len(targets) == 3) {
				t.Fatalf("GroupA(q, v) = %v with targets %v", a, targets)
			}
			if a != nil {
				all := make([]float32, a.Len())
				m.Backend.Download(all, a)
				va := ad.LoRA(0, model.ProjV).A
				v := make([]float32, va.Len())
				m.Backend.Download(v, va)
				for i := range v {
					if v[i] != all[len(all)-len(v)+i] {
						t.Fatalf("v_proj's A is not the last rows of the group's buffer")
					}
				}
			}
		})
	}
}

// run returns the log-probs and every gradient of one forward and backward
// from zeroed gradients, over a fixed batch and dlogp.
func run(t *testing.T, m *model.Model, ad *Adapter) [][]float32 {
	t.Helper()
	ad.ZeroGrad()
	rng := rand.New(rand.NewPCG(4, 4))
	var b model.Batch
	var targets []int32
	for s, n := range []int{7, 5} {
		for i := range n {
			b.Add(s, i, int32(rng.IntN(m.Config.VocabSize)))
			targets = append(targets, int32(rng.IntN(m.Config.VocabSize)))
		}
	}
	tr, err := m.ForwardTrain(&b, nil, targets)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	be := m.Backend
	d := be.Alloc(kernels.F32, tr.Rows())
	defer be.Free(d)
	dv := make([]float32, tr.Rows())
	for i := range dv {
		dv[i] = float32(rng.NormFloat64())
	}
	be.Upload(d, dv)
	if err := tr.Backward(d); err != nil {
		t.Fatal(err)
	}
	out := [][]float32{make([]float32, tr.Rows())}
	be.Download(out[0], tr.Logp)
	for _, p := range ad.Params() {
		g := make([]float32, p.Grad.Len())
		be.Download(g, p.Grad)
		out = append(out, g)
	}
	return out
}
