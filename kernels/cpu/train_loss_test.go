package cpu_test

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// TestPolicyLossRejectsBadSequences: sequence starts that do not run
// from 0 to n without going back are refused by name, not read past.
func TestPolicyLossRejectsBadSequences(t *testing.T) {
	b := cpu.New()
	x, starts := b.Alloc(kernels.F32, 4), b.Alloc(kernels.I32, 3)
	in := kernels.PolicyLossIn{Logp: x, OldLogp: x, BehaviourLogp: x, Adv: x, Weight: x, SeqStart: starts, N: 4, NumSeq: 2}
	out := kernels.PolicyLossOut{Loss: x, DLogp: x, Clip: x, ISClip: x, Mismatch: x}
	for _, s := range [][]int32{{1, 2, 4}, {0, 3, 2}, {0, 2, 3}} {
		b.UploadI32(starts, s)
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "seqStart") || !strings.Contains(msg, "nondecreasing from 0 to n = 4") {
					t.Errorf("seqStart %v: want a panic naming seqStart, got %q", s, msg)
				}
			}()
			b.PolicyLoss(out, in, kernels.PolicyLossParams{EpsLow: 0.2, EpsHigh: 0.2})
		}()
	}
}
