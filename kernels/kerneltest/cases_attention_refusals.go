package kerneltest

import (
	"fmt"
	"math"
	"strings"

	"github.com/grpo-dev/grpo/kernels"
)

// attentionBF16RefusalCases: a BF16 out (Attention, AttentionSharedPrefix)
// or a BF16 dq, dout or out (AttentionBackward) beside an f32 q must
// panic with a message naming the op — only the tensor-core kernels,
// which a BF16 q takes, read and write bf16 activations.
func attentionBF16RefusalCases() []Case {
	var cs []Case
	for _, op := range []string{"Attention", "AttentionSharedPrefix", "AttentionBackward/dq", "AttentionBackward/dout", "AttentionBackward/out"} {
		name, operand, _ := strings.Cut(op, "/")
		if operand == "" {
			operand = "out"
		}
		cs = append(cs, Case{Op: name, Name: "refuses-bf16-" + operand + "-beside-f32-q", check: func(b kernels.Backend) error {
			return checkBF16Refusal(b, name, operand)
		}})
	}
	return cs
}

func checkBF16Refusal(b kernels.Backend, op, operand string) (err error) {
	const nTok, nHead, nKV, headDim = 4, 2, 1, 16
	e := newEnv(b, 4300)
	defer e.free()
	nq, nc := nTok*nHead*headDim, nTok*nKV*headDim
	posv := []int32{0, 1, 2, 3}
	q, k, v := e.in("q", e.uniform(nq, 1)), e.in("kCache", e.uniform(nc, 1)), e.in("vCache", e.uniform(nc, 1))
	seq, pos, table := e.ints("seq", make([]int32, nTok)), e.ints("pos", posv), e.ints("table", []int32{0})
	groups := e.ints("groups", kernels.PrefixGroups([]int32{0}, 1, nTok, make([]int32, nTok), posv))
	pages := kernels.KVPages{Table: table.view, BlockSize: nTok, MaxBlocks: 1}
	dt := func(name string) kernels.DType {
		if name == operand {
			return kernels.BF16
		}
		return kernels.F32
	}
	out, lse := e.floats("out", dt("out"), nans(nq), false), e.out("lse", nans(nTok*nHead))
	dout, dq := e.floats("dout", dt("dout"), e.uniform(nq, 1), true), e.floats("dq", dt("dq"), nans(nq), false)
	dk, dv := e.out("dk", make([]float32, nc)), e.out("dv", make([]float32, nc))
	scale := float32(1 / math.Sqrt(headDim))
	defer func() {
		r := recover()
		msg := fmt.Sprint(r)
		switch {
		case r == nil:
			err = fmt.Errorf("%s with a bf16 %s beside an f32 q did not panic", op, operand)
		case !strings.Contains(msg, op+":"):
			err = fmt.Errorf("%s with a bf16 %s beside an f32 q panicked without naming the op: %s", op, operand, msg)
		}
	}()
	switch op {
	case "Attention":
		b.Attention(out.view, lse.view, q.view, k.view, v.view, seq.view, pos.view, pages, nTok, nHead, nKV, headDim, scale, kernels.AttentionVariant{})
	case "AttentionSharedPrefix":
		b.AttentionSharedPrefix(out.view, lse.view, q.view, k.view, v.view, seq.view, pos.view, groups.view, pages, nTok, nHead, nKV, headDim, scale, kernels.AttentionVariant{})
	default:
		b.AttentionBackward(dq.view, dk.view, dv.view, dout.view, out.view, lse.view, q.view, k.view, v.view, seq.view, pos.view, pages,
			nTok, nHead, nKV, headDim, scale, kernels.AttentionVariant{})
	}
	return nil
}
