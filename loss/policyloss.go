package loss

import "github.com/grpo-dev/grpo/kernels"

// lossRows are a micro-batch's trained tokens as PolicyLoss takes them:
// the forward's rows that score them and their targets, the sampler's
// log-probs, advantages and loss weights, and where each sample's tokens
// start (sequence-level terms reduce over them).
type lossRows struct {
	rows, targets     []int32
	behaviour, adv, w []float32
	seqStart          []int32
}

// add appends the trained tokens of s, whose forward rows start at start:
// row start+len(Prompt)−1+j predicts completion token j; the rows before
// it predict prompt tokens and carry no loss.
func (r *lossRows) add(s *Sample, start int32, weights []float32) {
	if r.seqStart == nil {
		r.seqStart = []int32{0}
	}
	for j, wj := range weights {
		if wj == 0 {
			continue
		}
		r.rows = append(r.rows, start+int32(len(s.Prompt)-1+j))
		r.targets = append(r.targets, s.Completion[j])
		r.behaviour, r.adv, r.w = append(r.behaviour, s.OldLogp[j]), append(r.adv, s.Advantage), append(r.w, wj)
	}
	if n := int32(len(r.rows)); n > r.seqStart[len(r.seqStart)-1] {
		r.seqStart = append(r.seqStart, n)
	}
}

// policyLoss runs PolicyLoss over r's tokens with their log-probs under
// the policy (logp) and the KL reference (ref, nil without the KL term),
// writes the per-token loss and metrics into st's rows and returns
// ∂loss/∂logp, which the caller frees. π_old is the sampler's log-probs,
// as prime-rl takes them, or, with a behaviour correction, the trainer's
// own, detached: TRL's old_per_token_logps, which one update per batch
// makes the forward's values.
func policyLoss(be kernels.Backend, logp, ref kernels.Buffer, r *lossRows, cfg Config, st *stepStats) kernels.Buffer {
	n := len(r.rows)
	upload := func(v []float32) kernels.Buffer {
		buf := be.Alloc(kernels.F32, len(v))
		be.Upload(buf, v)
		return buf
	}
	behaviour, adv, w := upload(r.behaviour), upload(r.adv), upload(r.w)
	starts := be.Alloc(kernels.I32, len(r.seqStart))
	be.UploadI32(starts, r.seqStart)
	old := behaviour
	p := cfg.kernelParams()
	if p.IS != kernels.ISNone {
		old = be.Alloc(kernels.F32, n)
		be.Copy(old, logp)
		defer be.Free(old)
	}
	defer func() {
		for _, x := range []kernels.Buffer{behaviour, adv, w, starts} {
			be.Free(x)
		}
	}()
	dlogp := be.Alloc(kernels.F32, n)
	be.PolicyLoss(kernels.PolicyLossOut{Loss: st.slice(st.loss, n), DLogp: dlogp, Clip: st.slice(st.clip, n),
		ISClip: st.slice(st.isClip, n), Mismatch: st.slice(st.mismatch, n), KL: st.slice(st.kl, n)},
		kernels.PolicyLossIn{Logp: logp, OldLogp: old, BehaviourLogp: behaviour, RefLogp: ref, Adv: adv,
			Weight: w, SeqStart: starts, N: n, NumSeq: len(r.seqStart) - 1}, p)
	be.Copy(st.slice(st.logp, n), logp)
	st.rows = append(st.rows, r.rows...)
	return dlogp
}
