package modeltest

import (
	"fmt"
	"math"
	"sort"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/model"
)

// adapter is a LoRA per projection, addressed by HF module name
// ("model.layers.0.self_attn.q_proj"); it implements model.Adapter.
type adapter map[string]*model.LoRA

func (a adapter) LoRA(layer int, p model.Proj) *model.LoRA {
	return a[moduleName(layer, p)]
}

func moduleName(layer int, p model.Proj) string {
	return fmt.Sprintf("model.layers.%d.%s", layer, p.Module())
}

// ExpertLoRA implements model.ExpertAdapter: the stacked adapter of every
// expert's p in a sparse layer is stored under expertModule's name, as a
// LoRA whose A and B hold all experts' matrices end to end.
func (a adapter) ExpertLoRA(layer int, p model.Proj) *model.ExpertLoRA {
	l := a[expertModule(layer, p)]
	if l == nil {
		return nil
	}
	return &model.ExpertLoRA{A: l.A, B: l.B, DA: l.DA, DB: l.DB, Rank: l.Rank, Scale: l.Scale}
}

// RouterLoRA implements model.RouterAdapter: a sparse layer's router
// adapter is stored under "model.layers.L.mlp.gate".
func (a adapter) RouterLoRA(layer int) *model.LoRA { return a[routerModule(layer)] }

func routerModule(layer int) string { return fmt.Sprintf("model.layers.%d.mlp.gate", layer) }

func expertModule(layer int, p model.Proj) string {
	return fmt.Sprintf("model.layers.%d.mlp.experts.%s", layer, p)
}

// newAdapter uploads (A, B) pairs onto be with zeroed gradients. ab gives
// each module's A (rank × in) and B (out × rank).
func newAdapter(be kernels.Backend, rank int, scale float32, ab map[string][2][]float32) adapter {
	ad := adapter{}
	for name, v := range ab {
		up := func(x []float32) kernels.Buffer {
			buf := be.Alloc(kernels.F32, len(x))
			be.Upload(buf, x)
			return buf
		}
		ad[name] = &model.LoRA{Rank: rank, Scale: scale, A: up(v[0]), B: up(v[1]),
			DA: be.Alloc(kernels.F32, len(v[0])), DB: be.Alloc(kernels.F32, len(v[1]))}
	}
	return ad
}

func (a adapter) free(be kernels.Backend) {
	for _, l := range a {
		for _, x := range []kernels.Buffer{l.A, l.B, l.DA, l.DB} {
			be.Free(x)
		}
	}
}

// gradient runs loss.PolicyGradient on a freshly zeroed adapter and
// returns its stats and every module's (dA, dB) on the host.
func gradient(t TB, base *model.Model, ad adapter, samples []loss.Sample, cfg loss.Config, maxTokens, microTokens int) (loss.Stats, map[string][2][]float32) {
	t.Helper()
	be := base.Backend
	for _, l := range ad {
		be.Fill(l.DA, 0, l.DA.Len())
		be.Fill(l.DB, 0, l.DB.Len())
	}
	st, err := loss.PolicyGradient(base.WithAdapter(ad), samples, cfg, maxTokens, microTokens)
	if err != nil {
		t.Fatalf("%s: PolicyGradient: %v", be.Name(), err)
	}
	grads := map[string][2][]float32{}
	for name, l := range ad {
		da, db := make([]float32, l.DA.Len()), make([]float32, l.DB.Len())
		be.Download(da, l.DA)
		be.Download(db, l.DB)
		grads[name] = [2][]float32{da, db}
	}
	if err := be.Sync(); err != nil {
		t.Fatalf("%s: %v", be.Name(), err)
	}
	return st, grads
}

// compareGrads holds every gradient tensor of got to the CPU backend's
// within bd.grad and returns the worst difference.
func compareGrads(t TB, bd bounds, got, cpuGot map[string][2][]float32) worst {
	t.Helper()
	var w worst
	for _, name := range sortedKeys(cpuGot) {
		for i, ab := range []string{"A", "B"} {
			d := compare(got[name][i], cpuGot[name][i])
			w.add(d, name+".d"+ab)
			if !d.within(bd.grad) {
				t.Errorf("gradient of %s.%s: against the CPU backend %s, want NMSE ≤ %g and max-abs ≤ %g", name, ab, d, bd.grad.NMSE, bd.grad.MaxAbs)
			}
		}
	}
	return w
}

// compareStats holds loss, entropy and KL to the CPU backend's within bd,
// the trained-token count exactly and the clip fractions to within
// bd.clipTokens tokens.
func compareStats(t TB, bd bounds, st, cpuSt loss.Stats) {
	t.Helper()
	if rel := math.Abs(st.Loss-cpuSt.Loss) / max(math.Abs(cpuSt.Loss), 1e-30); !(rel <= bd.loss) {
		t.Errorf("loss %.9g, the CPU backend's %.9g (rel %.2g > %g)", st.Loss, cpuSt.Loss, rel, bd.loss)
	}
	clip := float64(bd.clipTokens)/float64(max(1, cpuSt.Tokens)) + 1e-12
	if st.Tokens != cpuSt.Tokens || !(math.Abs(st.ClipLow-cpuSt.ClipLow) <= clip) || !(math.Abs(st.ClipHigh-cpuSt.ClipHigh) <= clip) {
		t.Errorf("tokens %d clip low/high %.4g/%.4g, the CPU backend's %d %.4g/%.4g (%d tokens' decisions may differ)",
			st.Tokens, st.ClipLow, st.ClipHigh, cpuSt.Tokens, cpuSt.ClipLow, cpuSt.ClipHigh, bd.clipTokens)
	}
	if !(math.Abs(st.Entropy-cpuSt.Entropy) <= bd.stats*max(1, cpuSt.Entropy)) || !(math.Abs(st.KL-cpuSt.KL) <= bd.stats*max(1, cpuSt.KL)) {
		t.Errorf("entropy %.9g kl %.9g, the CPU backend's %.9g %.9g", st.Entropy, st.KL, cpuSt.Entropy, cpuSt.KL)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
