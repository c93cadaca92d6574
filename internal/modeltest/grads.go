package modeltest

import (
	"math"
	"math/rand/v2"
	"path/filepath"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/model"
)

// checkGrads runs one GRPO policy-gradient step of the model in dir on be
// and on the CPU backend — a rank-4 adapter on all seven projections with
// random A and non-zero B, a batch with a multi-turn (env-token) mask, a
// truncated sample, mixed-sign advantages, old log-probs near the model's
// own so some ratios clip, the KL penalty on (a second forward with the
// adapter off) and micro-batches of 16 tokens — and holds the loss, the
// metrics and every LoRA gradient of be to the CPU backend's. The goldens
// of grpo_loss.json cover two models; this covers all of Models, bf16
// weights and Qwen3-MoE expert and router adapters included, and each
// under its recompute policies (checkRecompute).
func checkGrads(t TB, be kernels.Backend, dir string, o Options) {
	m, ref := loadBoth(t, be, dir)
	defer m.Free()
	defer ref.Free()
	ad, cpuAd, samples, cfg := gradFixture(t, m, ref)
	defer ad.free(m.Backend)
	defer cpuAd.free(ref.Backend)
	st, grads := gradient(t, m, ad, samples, cfg, 16, 16)
	cpuSt, cpuGrads := gradient(t, ref, cpuAd, samples, cfg, 16, 16)
	if cpuSt.ClipRegion == 0 || cpuSt.KL == 0 {
		t.Errorf("the batch exercises no clipping (%.3g) or no KL (%.3g): its old log-probs need a wider spread", cpuSt.ClipRegion, cpuSt.KL)
	}
	bd := boundsFor(m)
	compareStats(t, bd, st, cpuSt)
	w := compareGrads(t, bd, grads, cpuGrads)
	t.Logf("loss %.6g (rel %.2g to the CPU backend's), %d tokens, clipped %.2g (CPU %.2g), entropy Δ %.2g, KL %.3g (Δ %.2g); gradients against the CPU backend: %s (%s)",
		st.Loss, math.Abs(st.Loss-cpuSt.Loss)/math.Abs(cpuSt.Loss), st.Tokens, st.ClipRegion, cpuSt.ClipRegion,
		math.Abs(st.Entropy-cpuSt.Entropy), st.KL, math.Abs(st.KL-cpuSt.KL), w.d, w.where)
	if o.Reorder != nil {
		checkDeterministic(t, m, ad, samples, cfg, st, grads, o.Reorder)
	}
	checkRecompute(t, filepath.Base(dir), m, ad, samples, cfg, st, grads, cpuSt, cpuGrads)
}

// checkDeterministic reruns checkGrads' step, then once more under
// reorder, and requires both to give st and grads bit for bit.
func checkDeterministic(t TB, m *model.Model, ad adapter, samples []loss.Sample, cfg loss.Config,
	st loss.Stats, grads map[string][2][]float32, reorder func() func()) {
	again, againGrads := gradient(t, m, ad, samples, cfg, 16, 16)
	restore := reorder()
	rev, revGrads := gradient(t, m, ad, samples, cfg, 16, 16)
	restore()
	for _, r := range []struct {
		what  string
		st    loss.Stats
		grads map[string][2][]float32
	}{{"a second run", again, againGrads}, {"a run with the blocks in the other order", rev, revGrads}} {
		if r.st != st {
			t.Errorf("%s: stats %+v, first run %+v", r.what, r.st, st)
		}
		if d := sameBits(r.grads, grads); d != "" {
			t.Errorf("%s: %s differs from the first run", r.what, d)
		}
	}
}

// gradFixture is checkGrads' step: the adapter on m's backend and on
// ref's (the CPU), the samples and the loss config.
func gradFixture(t TB, m, ref *model.Model) (ad, cpuAd adapter, samples []loss.Sample, cfg loss.Config) {
	be := m.Backend
	cpuBE := ref.Backend
	c := ref.Config
	const rank = 4
	rng := rand.New(rand.NewPCG(3, 5))
	uniform := func(n int, bound float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32((2*rng.Float64() - 1) * bound)
		}
		return v
	}
	ab := map[string][2][]float32{}
	for l := range c.NumLayers {
		if c.IsSparse(l) {
			// The router's adapter: with it the load-balancing loss
			// (router_aux_loss_coef) joins the gradient.
			ab[routerModule(l)] = [2][]float32{uniform(rank*c.HiddenSize, 1/float64(c.HiddenSize)), uniform(c.NumExperts*rank, 0.05)}
		}
		for p := range model.NumProj {
			if !c.HasProj(l, p) {
				continue
			}
			in, out := c.Dims(p)
			name, experts := moduleName(l, p), 1
			if c.IsSparse(l) && p.IsMLP() {
				// Every expert's adapter of p, stacked.
				in, out = c.ExpertDims(p)
				name, experts = expertModule(l, p), c.NumExperts
			}
			// B of the size a few hundred steps of training give it, so
			// the adapter moves the logits by about a tenth of their scale.
			ab[name] = [2][]float32{uniform(experts*rank*in, 1/float64(in)), uniform(experts*out*rank, 0.05)}
		}
	}
	const scale = 2
	ad, cpuAd = newAdapter(be, rank, scale, ab), newAdapter(cpuBE, rank, scale, ab)

	shapes := []struct {
		prompt, completion int
		adv                float32
		envTurn            bool // completion tokens 3..5 are an env reply
		truncated          bool
		sharesPrompt       bool // the previous sample's prompt: a GRPO group, run once (model.Batch.Share)
	}{{5, 7, 1.2, false, false, false}, {3, 10, -0.7, true, false, false}, {8, 4, 0.4, false, true, false},
		{2, 6, -0.9, false, false, false}, {2, 5, 1.5, false, false, true}}
	for _, sh := range shapes {
		ids := make([]int32, sh.prompt+sh.completion)
		for i := range ids {
			ids[i] = int32(rng.IntN(c.VocabSize))
		}
		if sh.sharesPrompt {
			copy(ids, samples[len(samples)-1].Prompt)
		}
		base, err := ref.TokenLogprobs(ids, sh.prompt)
		if err != nil {
			t.Fatal(err)
		}
		s := loss.Sample{Prompt: ids[:sh.prompt], Completion: ids[sh.prompt:], Advantage: sh.adv, Truncated: sh.truncated,
			OldLogp: make([]float32, sh.completion)}
		for j := range base {
			// ±0.3 around the base model's log-prob: some ratios land
			// outside [1−ε, 1+ε_high], so the clip is exercised.
			s.OldLogp[j] = base[j] + float32(0.6*rng.Float64()-0.3)
		}
		if sh.envTurn {
			s.ModelMask = make([]bool, sh.completion)
			for j := range s.ModelMask {
				s.ModelMask[j] = j < 3 || j > 5
			}
		}
		samples = append(samples, s)
	}
	eh := 0.28
	cfg = loss.Config{Type: "dapo", Epsilon: 0.2, EpsilonHigh: &eh, Beta: 0.05, ScaleRewards: "group", MaskTruncated: true}
	return ad, cpuAd, samples, cfg
}

// loadBoth loads the model in dir on be and, as the reference, on a fresh
// CPU backend.
func loadBoth(t TB, be kernels.Backend, dir string) (m, ref *model.Model) {
	m, err := model.Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	if ref, err = model.Load(dir, cpu.New()); err != nil {
		m.Free()
		t.Fatal(err)
	}
	return m, ref
}
