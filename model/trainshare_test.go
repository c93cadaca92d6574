package model

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
)

// groupBatch packs groups of rollouts that share a prompt: per group one
// prompt of promptLen tokens, then g completions of different lengths. It
// returns the batch, the scored rows (completion rows: the last prompt
// position and every completion position but the last), their targets and
// the Share declarations (child, parent, n) a caller would make.
func groupBatch(rng *rand.Rand, vocab int, groups, g, promptLen int) (*Batch, []int32, []int32, [][3]int) {
	b := &Batch{}
	var rows, targets []int32
	var shares [][3]int
	slot := 0
	for range groups {
		prompt := make([]int32, promptLen)
		for i := range prompt {
			prompt[i] = int32(rng.IntN(vocab))
		}
		parent := slot
		for r := range g {
			comp := make([]int32, 3+rng.IntN(5))
			for i := range comp {
				comp[i] = int32(rng.IntN(vocab))
			}
			seq := append(append([]int32{}, prompt...), comp...)
			start := int32(b.Len())
			b.Add(slot, 0, seq[:len(seq)-1]...)
			for j := range comp {
				rows = append(rows, start+int32(promptLen-1+j))
				targets = append(targets, comp[j])
			}
			if r > 0 {
				shares = append(shares, [3]int{slot, parent, promptLen})
			}
			slot++
		}
	}
	return b, rows, targets, shares
}

// TestSharedPrefixMatchesUnshared: a training forward and backward where a
// group's rollouts share their prompt gives the log-probs and every LoRA
// gradient of the same batch with each prompt run per rollout (cpu, f32:
// only summation order differs; log-probs within 1e-5, each gradient at
// NMSE ≤ 1e-6 and within 1e-4 of its scale), and runs fewer tokens. (On
// the tiny Qwen3.5 merely reversing the unshared batch's sequences moves
// log-probs by 5e-6 and gradients by NMSE 3e-10, max |Δ| 1.2e-5 of their
// scale; dropping the prompts' recurrent or conv state gradient puts a
// gradient off by NMSE 1.2 or 0.4.) The
// hybrid Qwen3.5 (three gated DeltaNet layers, one attention layer) hands
// the prompt to its continuations as the DeltaNet states at the prompt's
// end and its gradient back through them (trainshare_linear.go); it runs
// without recompute and with every layer checkpointed, whose backward
// reruns the prompts' call.
func TestSharedPrefixMatchesUnshared(t *testing.T) {
	for _, arch := range []string{"qwen3", "qwen3+window+sinks", "llama", "qwen3_5-tiny", "qwen3_5-tiny/layer"} {
		t.Run(arch, func(t *testing.T) {
			var m *Model
			if name, policy, ok := strings.Cut(arch, "/"); strings.HasSuffix(name, "-tiny") {
				m = loadTiny(t, name)
				defer m.Free()
				if ok {
					m.Recompute, _ = ParseRecompute(policy)
				}
			} else if arch == "qwen3+window+sinks" {
				// A window of 3 in layer 0: the continuations see the shared
				// prompt's last keys only there, all of it in layer 1.
				m = variantModel(cpu.New(), 31, []int{3, 0}, randomSinks(rand.New(rand.NewPCG(7, 7))))
			} else {
				m = NewRandom(tinyConfig(arch), cpu.New(), 31)
			}
			ad := newTestAdapter(m, 2, 9)
			m = m.WithAdapter(ad)
			rng := rand.New(rand.NewPCG(5, 6))
			b, rows, targets, shares := groupBatch(rng, m.Config.VocabSize, 2, 4, 9)
			dlogp := make([]float32, len(rows))
			for i := range dlogp {
				dlogp[i] = float32(rng.NormFloat64())
			}
			plain := trainGrads(t, m, ad, b, rows, targets, dlogp)
			sb := *b
			for _, s := range shares {
				sb.Share(s[0], s[1], s[2])
			}
			tr, err := m.ForwardTrain(&sb, rows, targets)
			if err != nil {
				t.Fatal(err)
			}
			// Each child keeps only its last prompt token (the first
			// scored row) of the 9.
			if want := b.Len() - len(shares)*8; tr.Len() != want {
				t.Errorf("shared trace runs %d tokens, want %d", tr.Len(), want)
			}
			tr.Free()
			alone := m.WithAdapter(ad)
			alone.NoPrefixSharing = true
			if tr, err = alone.ForwardTrain(&sb, rows, targets); err != nil {
				t.Fatal(err)
			}
			if tr.Len() != b.Len() {
				t.Errorf("NoPrefixSharing: the trace runs %d tokens, want every one of the batch's %d", tr.Len(), b.Len())
			}
			tr.Free()
			shared := trainGrads(t, m, ad, &sb, rows, targets, dlogp)
			for i := range rows {
				if d := plain.logp[i] - shared.logp[i]; d > 1e-5 || d < -1e-5 {
					t.Errorf("row %d: log-prob %g shared, %g unshared", rows[i], shared.logp[i], plain.logp[i])
				}
			}
			worst, worstNMSE := maxAbsDiff(plain.logp, shared.logp), 0.0
			for k := range plain.grads {
				d, e := maxAbsDiff(plain.grads[k], shared.grads[k]), nmse(shared.grads[k], plain.grads[k])
				if d > 1e-4*(1+maxAbs(plain.grads[k])) || e > 1e-6 {
					t.Errorf("gradient %d: max |Δ| %g (scale %g), NMSE %g between shared and unshared prompts", k, d, maxAbs(plain.grads[k]), e)
				}
				worstNMSE = max(worstNMSE, e)
			}
			t.Logf("shared vs unshared: log-probs max |Δ| %.3g; %d LoRA gradients, worst NMSE %.3g", worst, len(plain.grads), worstNMSE)
		})
	}
}

// TestShareRejectsMismatch: a Share whose positions differ, a chain of
// shares, or a share of a sequence with itself is an error, not a wrong
// result.
func TestShareRejectsMismatch(t *testing.T) {
	m := NewRandom(tinyConfig("qwen3"), cpu.New(), 1)
	b, rows, targets, _ := groupBatch(rand.New(rand.NewPCG(1, 2)), m.Config.VocabSize, 2, 2, 5)
	for _, sh := range [][][3]int{
		{{2, 0, 5}},            // other group's prompt
		{{1, 0, 5}, {2, 1, 5}}, // chain
		{{1, 1, 5}},            // itself
		{{1, 0, 5}, {1, 0, 5}}, // twice
	} {
		sb := *b
		sb.shares = nil
		for _, s := range sh {
			sb.Share(s[0], s[1], s[2])
		}
		if tr, err := m.ForwardTrain(&sb, rows, targets); err == nil {
			tr.Free()
			t.Errorf("shares %v: no error", sh)
		}
	}
}
