package cpu_test

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// Mutants of the LinearOps, each broken the way state plumbing breaks:
// the LinearOps cases must catch every one.

// withRuns calls op with the runs rewritten by f (a new runs buffer).
func withRuns(b *cpu.Backend, runs kernels.Buffer, nRuns int, f func([]int32) []int32, op func(runs kernels.Buffer, nRuns int)) {
	rs := f(append([]int32(nil), cpu.Int32s(runs)[:4*nRuns]...))
	buf := b.Alloc(kernels.I32, len(rs))
	defer b.Free(buf)
	b.UploadI32(buf, rs)
	op(buf, len(rs)/4)
}

// freshInit: every run starts from zero state.
func freshInit(rs []int32) []int32 {
	for i := 2; i < len(rs); i += 4 {
		rs[i] = -1
	}
	return rs
}

// chunksForget splits runs at every 64 tokens, the later pieces starting
// fresh and writing no state: a chunked kernel that drops the state
// between chunks.
func chunksForget(rs []int32) []int32 {
	var out []int32
	for i := 0; i < len(rs); i += 4 {
		first, n, init, final := rs[i], rs[i+1], rs[i+2], rs[i+3]
		for c := int32(0); c < n; c += 64 {
			in, fin := int32(-1), int32(-1)
			if c == 0 {
				in = init
			}
			if c+64 >= n {
				fin = final
			}
			out = append(out, first+c, min(64, n-c), in, fin)
		}
	}
	return out
}

type convIgnoresInit struct{ *cpu.Backend }

func (m convIgnoresInit) CausalConv1D(out, x, w, bias, convState, runs kernels.Buffer, nRuns, nTok, channels, kernel int) {
	withRuns(m.Backend, runs, nRuns, freshInit, func(r kernels.Buffer, n int) {
		m.Backend.CausalConv1D(out, x, w, bias, convState, r, n, nTok, channels, kernel)
	})
}

type deltaForgetsChunks struct{ *cpu.Backend }

func (m deltaForgetsChunks) GatedDeltaRule(out, qkv, g, beta, state, runs kernels.Buffer, nRuns, nTok, nHeadK, nHeadV, dimK, dimV int) {
	withRuns(m.Backend, runs, nRuns, chunksForget, func(r kernels.Buffer, n int) {
		m.Backend.GatedDeltaRule(out, qkv, g, beta, state, r, n, nTok, nHeadK, nHeadV, dimK, dimV)
	})
}

// overwritesInitGradient stores the initial states' gradients instead of
// adding them (so runs sharing a slot lose all but one).
type overwritesInitGradient struct{ *cpu.Backend }

func (m overwritesInitGradient) GatedDeltaRuleBackward(dqkv, dg, dbeta, dState, dout, qkv, g, beta, state, runs kernels.Buffer, nRuns, nTok, nHeadK, nHeadV, dimK, dimV int) {
	per := nHeadV * dimK * dimV
	ds := cpu.Float32s(dState)
	rs := cpu.Int32s(runs)
	for r := range nRuns {
		if s := int(rs[4*r+2]); s >= 0 {
			clear(ds[s*per : (s+1)*per])
		}
	}
	m.Backend.GatedDeltaRuleBackward(dqkv, dg, dbeta, dState, dout, qkv, g, beta, state, runs, nRuns, nTok, nHeadK, nHeadV, dimK, dimV)
}

// dropsFinalGradient ignores the gradient arriving at the final slots.
type dropsFinalGradient struct{ *cpu.Backend }

func (m dropsFinalGradient) CausalConv1DBackward(dx, dConvState, dout, x, w, bias, convState, runs kernels.Buffer, nRuns, nTok, channels, kernel int) {
	withRuns(m.Backend, runs, nRuns, func(rs []int32) []int32 {
		for i := 3; i < len(rs); i += 4 {
			rs[i] = -1
		}
		return rs
	}, func(r kernels.Buffer, n int) {
		m.Backend.CausalConv1DBackward(dx, dConvState, dout, x, w, bias, convState, r, n, nTok, channels, kernel)
	})
}

func TestSuiteCatchesBrokenLinearOps(t *testing.T) {
	base := cpu.New()
	requireMutantsFail(t, base, []mutant{
		{"CausalConv1D", "ignores the init state", convIgnoresInit{base}, nil},
		{"GatedDeltaRule", "drops the state between chunks of 64", deltaForgetsChunks{base}, nil},
		{"GatedDeltaRuleBackward", "overwrites dState at init slots instead of adding", overwritesInitGradient{base}, nil},
		{"CausalConv1DBackward", "drops the final state's gradient", dropsFinalGradient{base}, nil},
	})
}
