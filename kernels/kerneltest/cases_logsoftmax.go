package kerneltest

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// logSoftmaxGatherCases cover vocab 1 (logp and entropy exactly 0), vocab
// sizes that are not multiples of 8, a Qwen-sized vocab, targets at both
// ends of the row, logits up to ±100 where exp without max-subtraction
// overflows, and the optional entropy output.
func logSoftmaxGatherCases() []Case {
	type shape struct {
		rows, vocab int
		scale       float64
		entropy     bool
	}
	shapes := []shape{{1, 1, 1, true}, {3, 7, 1, false}, {5, 1003, 3, true}, {4, 1003, 100, true}, {2, 32003, 5, true}, {1, 151936, 10, true}}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(1100+i)
		cs = append(cs, Case{Op: "LogSoftmaxGather", Name: fmt.Sprintf("rows=%d,vocab=%d,scale=%g,entropy=%v", s.rows, s.vocab, s.scale, s.entropy),
			check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				tv := make([]int32, s.rows)
				for r := range tv {
					tv[r] = int32(e.rng.IntN(s.vocab))
				}
				tv[0] = int32(s.vocab - 1)
				if s.rows > 1 {
					tv[1] = 0
				}
				logits := e.in("logits", e.uniform(s.rows*s.vocab, s.scale))
				target := e.ints("target", tv)
				logp := e.out("logp", nans(s.rows))
				var ent *operand
				var entBuf kernels.Buffer
				if s.entropy {
					ent = e.out("entropy", nans(s.rows))
					entBuf = ent.view
				}
				wantLogp, wantEnt := RefLogSoftmaxGather(logits.values(), tv, s.rows, s.vocab)
				b.LogSoftmaxGather(logp.view, entBuf, logits.view, target.view, s.rows, s.vocab)
				if err := e.checkAll(); err != nil {
					return err
				}
				if err := Compare("logp", logp.result(b), wantLogp, tolReduction); err != nil {
					return err
				}
				if s.entropy {
					return Compare("entropy", ent.result(b), wantEnt, tolReduction)
				}
				return nil
			}})
	}
	return cs
}
