package modeltest

import (
	"fmt"
	"math"
	"sort"

	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/model"
)

// recomputeCases are the recompute settings each tiny model is run under
// on the backend: per-layer checkpointing (the whole layer rerun) on all
// of Models, of the last layer only on the Qwen2 one (the other layer
// keeping everything, or under selective), and the finer policies on the
// Qwen3 pair (q/k norms; f32 and bf16), the Llama f32 model and the
// Qwen3-MoE ones: there a checkpointed sparse layer reruns its experts
// with the forward's routing replayed, and keeps its router logits for
// the load-balancing loss (the fixture adapts the routers); the one with a
// dense layer checkpoints a sparse layer alone (selective+layer:1) and a
// dense and a sparse one beside a sparse layer under swiglu.
var recomputeCases = map[string][]string{
	"qwen3-tiny":              {"selective", "layer"},
	"qwen3-tiny-bf16":         {"selective", "layer"},
	"qwen2-tiny":              {"layer:1", "selective+layer:1", "layer"},
	"llama-tiny":              {"swiglu", "layer"},
	"llama-tiny-bf16-sharded": {"layer"},
	"qwen3-moe-tiny":          {"selective", "layer"},
	"qwen3-moe-tiny-dense":    {"swiglu+layer:2", "selective+layer:1", "layer"},
	"qwen3-moe-tiny-bf16":     {"layer"},
}

// checkRecompute reruns checkGrads' policy-gradient step (m with adapter
// ad; st and want its stats and gradients without recompute, cpuSt and
// cpuGrads the CPU backend's) under each of the model's recomputeCases and
// holds every policy's loss, metrics and LoRA gradients to the CPU
// backend's within checkGrads' bounds. When m's backend is deterministic —
// a second run without recompute agrees bit for bit — each policy must
// also agree with it bit for bit, as on the CPU: the backward reruns the
// forward's kernels on the same inputs. (emu's attention backward
// accumulates dK/dV with atomics in an order that varies, so there the
// bounds are the check until that kernel is deterministic.)
func checkRecompute(t TB, name string, m *model.Model, ad adapter, samples []loss.Sample, cfg loss.Config,
	st loss.Stats, want map[string][2][]float32, cpuSt loss.Stats, cpuGrads map[string][2][]float32) {
	policies := recomputeCases[name]
	if len(policies) == 0 {
		return
	}
	_, again := gradient(t, m, ad, samples, cfg, 16, 16)
	deterministic := sameBits(want, again) == ""
	bd := boundsFor(m)
	for _, p := range policies {
		pm := m.WithAdapter(nil)
		var err error
		if pm.Recompute, pm.CheckpointLayers, err = model.ParseRecomputeSetting(p); err != nil {
			t.Fatal(err)
		}
		got, grads := gradient(t, pm, ad, samples, cfg, 16, 16)
		compareStats(t, bd, got, cpuSt)
		w := compareGrads(t, bd, grads, cpuGrads)
		t.Logf("recompute %s (%s deterministic: %v): gradients against the CPU backend's without recompute: %s (%s)", p, m.Backend.Name(), deterministic, w.d, w.where)
		if !deterministic {
			continue
		}
		if got != st {
			t.Errorf("recompute %s: stats %+v, %+v without recompute", p, got, st)
		}
		if d := sameBits(grads, want); d != "" {
			t.Errorf("recompute %s: %s differs from the run without recompute", p, d)
		}
	}
}

// sameBits names the first gradient element where a and b differ in their
// bits, or is "".
func sameBits(a, b map[string][2][]float32) string {
	names := make([]string, 0, len(a))
	for name := range a {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for k := range a[name] {
			if i := firstBitDiff(a[name][k], b[name][k]); i >= 0 {
				return fmt.Sprintf("%s d%c[%d] (%g vs %g)", name, "AB"[k], i, a[name][k][min(i, len(a[name][k])-1)], b[name][k][min(i, len(b[name][k])-1)])
			}
		}
	}
	return ""
}

// firstBitDiff is the first index where a and b differ in their bits, or
// -1.
func firstBitDiff(a, b []float32) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
