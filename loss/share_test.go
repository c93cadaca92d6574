package loss

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// TestSharedPromptsMatchPerSample: groups of rollouts with one prompt each
// give the loss, metrics and LoRA gradients in one micro-batch (where the
// forward runs each prompt once) that they give one sample per micro-batch
// (each prompt run per rollout), KL penalty included.
func TestSharedPromptsMatchPerSample(t *testing.T) {
	be := cpu.New()
	base, err := model.Load("../testdata/models/qwen3-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(8, 9))
	ad := randomAdapter(base, rng)
	policy := base.WithAdapter(ad)
	var samples []Sample
	for range 3 {
		prompt := make([]int32, 4+rng.IntN(6))
		for i := range prompt {
			prompt[i] = int32(rng.IntN(base.Config.VocabSize))
		}
		for range 4 {
			s := Sample{Prompt: prompt, Completion: make([]int32, 2+rng.IntN(6)), Advantage: float32(rng.NormFloat64())}
			s.OldLogp = make([]float32, len(s.Completion))
			for j := range s.Completion {
				s.Completion[j] = int32(rng.IntN(base.Config.VocabSize))
				s.OldLogp[j] = -6 + float32(rng.NormFloat64()*0.3)
			}
			samples = append(samples, s)
		}
	}
	cfg := DefaultConfig()
	cfg.Beta = 0.05
	run := func(micro int) (Stats, [][]float32) {
		for _, lr := range ad {
			be.Fill(lr.DA, 0, lr.DA.Len())
			be.Fill(lr.DB, 0, lr.DB.Len())
		}
		st, err := PolicyGradient(policy, samples, cfg, 16, micro)
		if err != nil {
			t.Fatal(err)
		}
		var grads [][]float32
		for l := range base.Config.NumLayers {
			for p := range model.NumProj {
				lr := ad[fmt.Sprintf("model.layers.%d.%s", l, p.Module())]
				if lr == nil {
					continue
				}
				for _, buf := range []kernels.Buffer{lr.DA, lr.DB} {
					v := make([]float32, buf.Len())
					be.Download(v, buf)
					grads = append(grads, v)
				}
			}
		}
		return st, grads
	}
	alone, aloneGrads := run(1)
	shared, sharedGrads := run(1 << 20)
	if alone.Tokens != shared.Tokens || rel(shared.Loss, alone.Loss) > 1e-5 || rel(shared.Entropy, alone.Entropy) > 1e-5 || rel(shared.KL, alone.KL) > 1e-4 {
		t.Errorf("shared prompts: %+v; one sample per micro-batch: %+v", shared, alone)
	}
	for i := range aloneGrads {
		if e := nmse(sharedGrads[i], aloneGrads[i]); e > 1e-10 {
			t.Errorf("gradient %d: NMSE %.2g between shared prompts and one sample per micro-batch", i, e)
		}
	}
}

// randomAdapter is a rank-2 adapter on every projection of base, A and
// B drawn from N(0, 0.1²).
func randomAdapter(base *model.Model, rng *rand.Rand) goldenAdapter {
	be := base.Backend
	ad := goldenAdapter{}
	for l := range base.Config.NumLayers {
		for p := range model.NumProj {
			if !base.Config.HasProj(l, p) {
				continue
			}
			in, out := base.Config.Dims(p)
			lr := &model.LoRA{Rank: 2, Scale: 2, A: be.Alloc(kernels.F32, 2*in), B: be.Alloc(kernels.F32, out*2),
				DA: be.Alloc(kernels.F32, 2*in), DB: be.Alloc(kernels.F32, out*2)}
			for _, buf := range []kernels.Buffer{lr.A, lr.B} {
				v := make([]float32, buf.Len())
				for i := range v {
					v[i] = float32(rng.NormFloat64() * 0.1)
				}
				be.Upload(buf, v)
			}
			ad[fmt.Sprintf("model.layers.%d.%s", l, p.Module())] = lr
		}
	}
	return ad
}

func rel(a, b float64) float64 {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d / max(1e-12, max(b, -b))
}
