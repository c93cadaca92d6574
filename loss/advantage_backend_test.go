package loss

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestHostAdvantagesMatchBackendOp: Advantages (on the host) gives what the
// GroupAdvantages op gives on the CPU backend — bit for bit, the same
// float64 loops — and on the emulated CUDA kernel (advantages.cu), whose
// block reductions sum in another order: within 1e-6 × max(1, |adv|), a
// few float32 ulps, and exactly 0 for every constant group on both.
func TestHostAdvantagesMatchBackendOp(t *testing.T) {
	e := emu.New()
	defer e.Close()
	backends := []struct {
		be  kernels.Backend
		tol float64
	}{{cpu.New(), 0}, {e, 1e-6}}
	rng := rand.New(rand.NewPCG(10, 6))
	for trial := range 40 {
		groups, size := 1+rng.IntN(24), 1+rng.IntN(16)
		rewards := make([]float32, groups*size)
		for g := range groups {
			kind := rng.IntN(3)
			c := rng.Float32()
			for i := range size {
				r := &rewards[g*size+i]
				switch kind {
				case 0: // pass/fail
					*r = float32(rng.IntN(2))
				case 1: // partial credit
					*r = rng.Float32()
				default: // constant: no signal, advantage exactly 0
					*r = c
				}
			}
		}
		for _, scale := range []kernels.AdvantageScale{kernels.ScaleGroup, kernels.ScaleBatch, kernels.ScaleNone} {
			host, _, err := Advantages(rewards, size, scale)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range backends {
				name := fmt.Sprintf("trial %d (%d×%d), scale %d, %s", trial, groups, size, scale, b.be.Name())
				got := backendAdvantages(t, b.be, rewards, groups, size, scale)
				for i, h := range host {
					grp := rewards[i/size*size : (i/size+1)*size]
					constant := true
					for _, r := range grp {
						constant = constant && r == grp[0]
					}
					if constant && (h != 0 || got[i] != 0) {
						t.Fatalf("%s: constant group %d: host %g, op %g, want exactly 0", name, i/size, h, got[i])
					}
					if d := math.Abs(float64(h) - float64(got[i])); !(d <= b.tol*math.Max(1, math.Abs(float64(got[i])))) {
						t.Fatalf("%s: adv[%d] host %.9g, op %.9g (|Δ| %.3g > %g × max(1, |adv|))", name, i, h, got[i], d, b.tol)
					}
				}
			}
		}
	}
}

func backendAdvantages(t *testing.T, be kernels.Backend, rewards []float32, groups, size int, scale kernels.AdvantageScale) []float32 {
	t.Helper()
	rb, ab := be.Alloc(kernels.F32, len(rewards)), be.Alloc(kernels.F32, len(rewards))
	defer be.Free(rb)
	defer be.Free(ab)
	be.Upload(rb, rewards)
	be.GroupAdvantages(ab, rb, groups, size, scale)
	out := make([]float32, len(rewards))
	be.Download(out, ab)
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	return out
}
