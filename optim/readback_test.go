package optim

import (
	"math"
	"testing"

	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestAdamWGradNormOneReadBack runs the torch golden's steps on the
// emulated CUDA backend: the gradient norm (within the golden's
// tolerance) comes back in one download per optimiser step, whatever the
// number of parameters.
func TestAdamWGradNormOneReadBack(t *testing.T) {
	g := loadAdamWGolden(t)
	be := emu.New()
	defer be.Close()
	o, params := newGoldenOptimizer(t, be, g)
	if len(params) < 2 {
		t.Fatalf("the golden has %d parameters; the test needs several", len(params))
	}
	for s, grads := range g.Grads {
		for i, p := range params {
			be.Upload(p.Grad, grads[i])
		}
		before := be.Counts()
		st, err := o.Update(len(g.Grads))
		if err != nil {
			t.Fatal(err)
		}
		if got := be.Counts().Sub(before); got.DtoH != 1 {
			t.Errorf("step %d: %d downloads for the gradient norm of %d parameters, want 1", s+1, got.DtoH, len(params))
		}
		if math.Abs(st.GradNorm-g.GradNorms[s]) > 1e-6*g.GradNorms[s] {
			t.Errorf("step %d: grad norm %v, want %v", s+1, st.GradNorm, g.GradNorms[s])
		}
	}
}
