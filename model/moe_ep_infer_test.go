package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestForwardExpertParallel: a tiny MoE sharded over 2 and 4 cpu ranks
// prefills, each rank its own prompts (rank 1 of 2 twice, its second
// call while rank 0 runs ForwardIdle; of 4 ranks, rank 3 idle), and each
// rank's logits are those one device holding every expert gives the same
// prompts, within 1e-5 relative (L2 over the call's logits). Each Forward
// makes one ExchangeCounts and two AllToAll per sparse layer, and so does
// each ForwardIdle. Qwen3-MoE (softmax router), GLM-4.5 (sigmoid
// router, shared expert, a dense first layer), Nemotron-H (Mamba-2, relu²
// experts; latent) and gpt-oss (biased experts; MXFP4 blocks per rank).
func TestForwardExpertParallel(t *testing.T) {
	for _, name := range []string{"qwen3-moe-tiny", "glm4_moe-tiny", "nemotron_h-tiny", "nemotron_h-latent-tiny", "gpt_oss-tiny", "gpt_oss-tiny-mxfp4"} {
		for _, ranks := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/ranks=%d", name, ranks), func(t *testing.T) {
				checkForwardExpertParallel(t, name, ranks, func() kernels.Backend { return cpu.New() }, 1e-5)
			})
		}
	}
}

// TestForwardExpertParallelBF16OnEmu is TestForwardExpertParallel's two
// ranks on emu with the bf16 Qwen3-MoE, whose prefill keeps bf16 between
// ops (forwardAttention) and exchanges its rows in bf16; its idle rank
// (ForwardIdle) exchanges in bf16 too (pagedForwardActs), which the
// group checks (inproc: every rank's rows of one dtype). Held to one emu
// device within 1e-5.
func TestForwardExpertParallelBF16OnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model under the emulator")
	}
	checkForwardExpertParallel(t, "qwen3-moe-tiny-bf16", 2, func() kernels.Backend {
		b := emu.New()
		t.Cleanup(func() { b.Close() })
		return b
	}, 1e-5)
}

func checkForwardExpertParallel(t *testing.T, name string, ranks int, open func() kernels.Backend, tol float64) {
	dir := filepath.Join("..", "testdata", "models", name)
	one, err := Load(dir, open())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, uint64(ranks)))
	// calls[r][i]: rank r's i-th Forward, nil for an idle one.
	calls := make([][]*Batch, ranks)
	for r := range ranks {
		for i := range 2 {
			if (i == 1 && r == 0) || (ranks == 4 && r == 3) {
				calls[r] = append(calls[r], nil)
				continue
			}
			b := &Batch{}
			for s := range 1 + (r+i)%3 {
				b.Add(s, 0, randomIDs(rng, 3+rng.IntN(5), one.Config.VocabSize)...)
			}
			calls[r] = append(calls[r], b)
		}
	}
	g, models := openRanks(t, dir, ranks, open, LoadExperts)
	got := make([][][]float32, ranks)
	runRanks(t, ranks, func(r int) error {
		m := models[r]
		cache := m.NewKVCache(4, 16)
		defer cache.Free()
		for _, b := range calls[r] {
			if b == nil {
				got[r] = append(got[r], nil)
				if err := m.ForwardIdle(); err != nil {
					return err
				}
				continue
			}
			logits, err := m.Logits(cache, b, nil)
			if err != nil {
				return err
			}
			got[r] = append(got[r], logits)
		}
		return nil
	})
	sparse := one.Config.SparseLayers()
	if c, a := g.Calls("counts"), g.Calls("all-to-all"); c != 2*sparse || a != 4*sparse {
		t.Errorf("%d count exchanges and %d all-to-all for two forwards of %d sparse layers; want %d and %d", c, a, sparse, 2*sparse, 4*sparse)
	}
	for r := range ranks {
		cache := one.NewKVCache(4, 16)
		for i, b := range calls[r] {
			if b == nil {
				continue
			}
			want, err := one.Logits(cache, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := relL2(got[r][i], want); d > tol {
				t.Errorf("rank %d call %d: logits off one device's by %.3g relative (want ≤ %g)", r, i, d, tol)
			} else {
				t.Logf("rank %d call %d: logits off one device's by %.3g relative", r, i, d)
			}
		}
		cache.Free()
	}
}

// relL2 is ‖got − want‖ / ‖want‖.
func relL2(got, want []float32) float64 {
	var d, n float64
	for i := range want {
		e := float64(got[i]) - float64(want[i])
		d += e * e
		n += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(d / n)
}
