package optim

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/inproc"
)

// TestShardAcrossTakesTheGlobalNorm: two ranks each hold a shared
// parameter (the same gradient on both) and one of their own; with
// ShardAcross each takes the gradient norm of all three and clips by it,
// so each parameter ends where one optimizer holding all three puts it
// (within 1e-6), with one all-reduce per update.
func TestShardAcrossTakesTheGlobalNorm(t *testing.T) {
	vals := [][]float32{{0.5, -1, 2}, {1, 2, 3, 4}, {-2, 0.25}}
	grads := [][]float32{{3, -4, 1}, {2, 2, -1, 0.5}, {-6, 7}}
	cfg := DefaultConfig()
	cfg.LR, cfg.MaxGradNorm, cfg.WarmupSteps = 0.1, 1, 0
	param := func(be kernels.Backend, i int) Param {
		v, g := be.Alloc(kernels.F32, len(vals[i])), be.Alloc(kernels.F32, len(vals[i]))
		be.Upload(v, vals[i])
		be.Upload(g, grads[i])
		return Param{Name: string(rune('a' + i)), Value: v, Grad: g}
	}
	one := cpu.New()
	whole, _ := NewAdamW(one, []Param{param(one, 0), param(one, 1), param(one, 2)}, cfg)
	want, err := whole.Update(10)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := inproc.NewGroup(2, time.Minute)
	got := make([]StepStats, 2)
	opts := make([]*AdamW, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		be := cpu.New()
		coll, _ := g.Join(r, be)
		opts[r], _ = NewAdamW(be, []Param{param(be, 0), param(be, 1+r)}, cfg)
		if err := opts[r].ShardAcross(coll, []bool{false, true}); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { got[r], errs[r] = opts[r].Update(10) })
	}
	wg.Wait()
	for r := range 2 {
		if errs[r] != nil {
			t.Fatal(errs[r])
		}
		if math.Abs(got[r].GradNorm-want.GradNorm) > 1e-6*want.GradNorm {
			t.Errorf("rank %d: gradient norm %v, one optimizer's %v", r, got[r].GradNorm, want.GradNorm)
		}
		for k, i := range []int{0, 1 + r} {
			w, v := download(one, whole.params[i].Value), download(opts[r].be, opts[r].params[k].Value)
			for j := range w {
				if math.Abs(float64(v[j]-w[j])) > 1e-6 {
					t.Errorf("rank %d parameter %s[%d] = %v, one optimizer's %v", r, whole.params[i].Name, j, v[j], w[j])
				}
			}
		}
	}
	if n := g.Calls("all-reduce"); n != 1 {
		t.Errorf("%d all-reduces for one update, want 1", n)
	}
}

func download(be kernels.Backend, b kernels.Buffer) []float32 {
	v := make([]float32, b.Len())
	be.Download(v, b)
	return v
}
