package cpu

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// run is one run of a LinearOps call (kernels.LinearOps documents them).
type run struct{ first, count, init, final int }

// linearRuns reads and checks the runs operand: tokens inside [0, nTok),
// slots inside [−1, slots). stateLen is the length of the state operand
// per slot (0 when the operand is nil: every slot must then be −1).
func linearRuns(op string, runs kernels.Buffer, nRuns, nTok int, state kernels.Buffer, perSlot int) ([]run, int) {
	if nRuns < 0 || nTok < 0 {
		panic(fmt.Sprintf("cpu.%s: nRuns %d, nTok %d", op, nRuns, nTok))
	}
	raw := ints(op, "runs", runs, 4*nRuns)
	slots := 0
	if state != nil {
		slots = state.Len() / perSlot
	}
	out := make([]run, nRuns)
	for i := range out {
		r := run{int(raw[4*i]), int(raw[4*i+1]), int(raw[4*i+2]), int(raw[4*i+3])}
		if r.first < 0 || r.count < 1 || r.first+r.count > nTok || r.init < -1 || r.init >= slots || r.final < -1 || r.final >= slots {
			panic(fmt.Sprintf("cpu.%s: run %d = %v: want tokens within [0, %d) and slots within [−1, %d)", op, i, raw[4*i:4*i+4], nTok, slots))
		}
		out[i] = r
	}
	return out, slots
}

// maxCount is the longest run.
func maxCount(runs []run) int {
	m := 0
	for _, r := range runs {
		m = max(m, r.count)
	}
	return m
}

// stateOf returns the slot's part of a state operand, or nil for none.
func stateOf(s []float32, slot, per int) []float32 {
	if slot < 0 {
		return nil
	}
	return s[slot*per : (slot+1)*per]
}
