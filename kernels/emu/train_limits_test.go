package emu

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// TestAttentionBackwardSharedLimit checks that a GQA group too wide for
// attention_backward_f32's shared memory even after opting in (sm_90's
// 227 KiB) is refused in Go with a message naming the shape, rather than
// failing at launch on a GPU. (Groups needing more than 48 KiB run:
// TestAttentionBackwardOptsIn.)
func TestAttentionBackwardSharedLimit(t *testing.T) {
	b := New()
	defer b.Close()
	const nTok, nHead, nKV, headDim, maxLen = 1, 64, 1, 256, 1
	f := func(n int) kernels.Buffer { return b.Alloc(kernels.F32, n) }
	q, kv := nTok*nHead*headDim, maxLen*nKV*headDim
	slot, pos := b.Alloc(kernels.I32, nTok), b.Alloc(kernels.I32, nTok)
	pages := kernels.KVPages{Table: b.Alloc(kernels.I32, 1), BlockSize: maxLen, MaxBlocks: 1}
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "nHead/nKV 64 × headDim 256") || !strings.Contains(msg, "shared memory") {
			t.Fatalf("want a panic naming the group and headDim, got %q", msg)
		}
	}()
	b.AttentionBackward(f(q), f(kv), f(kv), f(q), f(q), f(nTok*nHead), f(q), f(kv), f(kv), slot, pos, pages, nTok, nHead, nKV, headDim, 1, kernels.AttentionVariant{})
}

// TestPolicyLossNeedsRefAndKLWithBeta checks the operand rule PolicyLoss
// adds: a KL coefficient without reference log-probs, or without the
// per-token KL output, is refused by name.
func TestPolicyLossNeedsRefAndKLWithBeta(t *testing.T) {
	b := New()
	defer b.Close()
	x, starts := b.Alloc(kernels.F32, 4), b.Alloc(kernels.I32, 2)
	b.UploadI32(starts, []int32{0, 4})
	in := kernels.PolicyLossIn{Logp: x, OldLogp: x, BehaviourLogp: x, RefLogp: x, Adv: x, Weight: x, SeqStart: starts, N: 4, NumSeq: 1}
	out := kernels.PolicyLossOut{Loss: x, DLogp: x, Clip: x, ISClip: x, Mismatch: x, KL: x}
	noRef, noKL := in, out
	noRef.RefLogp, noKL.KL = nil, nil
	for _, c := range []struct {
		in  kernels.PolicyLossIn
		out kernels.PolicyLossOut
	}{{noRef, out}, {in, noKL}} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "kl or refLogp is nil but Beta is 0.04") {
					t.Fatalf("want a panic naming kl, refLogp and Beta, got %q", msg)
				}
			}()
			b.PolicyLoss(c.out, c.in, kernels.PolicyLossParams{EpsLow: 0.2, EpsHigh: 0.2, Beta: 0.04})
		}()
	}
}
