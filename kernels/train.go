package kernels

// TrainOps are the ops that training adds to the forward pass (every
// Backend has them): the
// backward of every forward op that lies between the loss and a LoRA
// parameter, the GRPO policy loss and the optimizer. (Group-relative
// advantages are a few hundred numbers a step: package loss computes them
// on the host.) Frozen weights never get gradients, so there is no weight
// gradient op for norms or embeddings.
type TrainOps interface {
	FusedTrainOps
	LoRATrainOps

	// Fill sets the first n elements of x to value.
	Fill(x Buffer, value float32, n int)

	// Scale multiplies the first n elements of x by alpha in place.
	Scale(x Buffer, alpha float32, n int)

	// SumSquares writes Σ x[i]² over n elements to out[0] (accumulated in
	// float64, rounded once), the building block of the gradient norm.
	SumSquares(out, x Buffer, n int)

	// RMSNormBackward computes the input gradient of RMSNorm with frozen w:
	// with y = x·r·w and r = rstd (from the forward),
	// dx[i] = r·w[i]·dy[i] − x[i]·r³·(1/dim)·Σ_j w[j]·dy[j]·x[j].
	// With accumulate set it adds into dx instead of overwriting it. dx may
	// alias dy when accumulate is false. dy may be BF16 (a backward GEMM's
	// bf16 output), read widened to f32; dx, x and rstd are F32. If dxBF16
	// (a BF16 buffer) is not nil it also receives the final dx (after the
	// accumulate) rounded to bf16 (nearest-even) in the same pass: the A
	// operand of the next backward GEMM, and the dY of a LoRA expand
	// backward, which then read it with no cast pass.
	RMSNormBackward(dx, dxBF16, dy, x, w, rstd Buffer, rows, dim int, accumulate bool)

	// SwiGLUBackward computes dgate = dy·up·silu'(gate) and dup =
	// dy·silu(gate), with silu'(g) = σ(g)·(1 + g·(1 − σ(g))). dgate and
	// dup may alias gate and up respectively (of their dtype). Each of the
	// five operands may be F32 or BF16 (read widened, computed in f32, a
	// BF16 gradient rounded once).
	SwiGLUBackward(dgate, dup, dy, gate, up Buffer, n int)

	// SigmoidGateBackward is SigmoidGate's backward: dx = dy·σ(gate) and
	// dgate = dy·x·σ(gate)·(1 − σ(gate)). Each element is read before it
	// is written, so dx may alias dy or x and dgate may alias gate (the
	// model overwrites saved activations with their gradients). Each of
	// the five operands may be F32 or BF16 on its own (read widened; a
	// bf16 gradient is its f32 value rounded once).
	SigmoidGateBackward(dx, dgate, dy, x, gate Buffer, n int)

	// AttentionBackward is the backward of Attention for the same operands:
	// given dout, the forward's out and lse, it writes dq (nTok × nHead ×
	// headDim, overwritten) and adds the key and value gradients into dk and
	// dv, laid out like the caches (NumBlocks × BlockSize × nKV × headDim,
	// through the same pages; the caller zeroes them). Probabilities are
	// recomputed from q, k and lse. A block shared by several sequences
	// gets the sum of their gradients. q and the caches are F32, or all
	// BF16 as Attention takes them (BF16AttentionHeadDim: a bf16 model's
	// trace on a backend whose KV dtype is bf16). Beside a BF16 q, out and
	// dout may each be BF16 (read widened) and dq may be BF16 (its f32 sum
	// rounded once, after everything that adds into it); with an f32 q
	// they are F32, and a BF16 one panics naming the op. lse, dk and dv are
	// F32.
	AttentionBackward(dq, dk, dv, dout, out, lse, q, kCache, vCache, seq, pos Buffer, pages KVPages, nTok, nHead, nKV, headDim int, scale float32, variant AttentionVariant)

	// ScatterRows copies row i of src (n × cols) into row idx[i] of out,
	// for i < n; rows of out that no index names keep their values. The
	// indices must be distinct. It is GatherRows' backward: the training
	// head scores only the rows that carry loss weight, and their gradient
	// goes back to those rows of the residual stream. out and src are both
	// F32 or both BF16 (a bf16 layer's expert rows under expert
	// parallelism), moved as they are.
	ScatterRows(out, src, idx Buffer, n, cols int)

	// LogSoftmaxGatherBackward computes, for each row, dlogits[r] =
	// dlogp[r]·(onehot(target[r]) − softmax(logits[r])): the gradient of
	// Σ_r dlogp[r]·logp[r] with logp from LogSoftmaxGather. dlogits is
	// F32, or BF16 (each gradient computed in f32, then rounded to
	// nearest even): the A operand of the LM head's backward MatMul with
	// BF16 weights, which takes it as it is instead of rounding an F32
	// dlogits in a pass of its own.
	LogSoftmaxGatherBackward(dlogits, dlogp, logits, target Buffer, rows, vocab int)

	// PolicyLoss computes a policy-gradient loss and its derivative in
	// logp, token by token, over in.NumSeq sequences whose tokens are
	// contiguous: sequence i owns tokens [SeqStart[i], SeqStart[i+1]). Per
	// token, with d = old − behaviour and ρ the behaviour correction
	// (p.IS; 1 when off):
	//   PPO:   r = exp(logp − old); pg = −min(r·A, clip(r, 1−EpsLow, 1+EpsHigh)·A)
	//   GSPO:  as PPO with the sequence's s = exp(mean over its tokens of
	//          (logp − old)) for r and its first token's A; the gradient
	//          reaches each token through the mean:
	//          ∂/∂logp_t = (Σ_seq weight·ρ)·∂pg/∂s·s/n_seq
	//   CISPO: r as PPO; pg = −sg(min(r, EpsHigh))·A·logp (EpsHigh is the
	//          cap itself, TRL's ε_max)
	//   DPPO:  prime-rl's default loss against the behaviour log-probs:
	//          r = exp(logp − behaviour), Δp = exp(logp) − exp(behaviour);
	//          a token is masked where A > 0 and Δp > MaskHigh or A ≤ 0 and
	//          Δp < −MaskLow; pg = −keep·AdvTau·A·r + KLTau·(logp − behaviour)²
	//   ρ (IS): token modes exp(d) per token, sequence modes exp(Σ_seq d);
	//          truncate clamps to [ISMin, ISMax], mask zeroes ρ outside it;
	//          no gradient flows through ρ
	//   kl  = exp(refLogp − logp) − (refLogp − logp) − 1   (only if Beta ≠ 0)
	//   loss[t] = weight[t]·(ρ·pg + Beta·kl), dlogp[t] = ∂(Σ loss)/∂logp[t].
	// weight carries the mask and the aggregation's normalisation, so Σ
	// loss is the batch loss. A clipped PPO/GSPO term has zero gradient.
	//
	// Per-token metrics come out of the same float64 values: clip[t] = +1
	// where the trust region cuts the gradient above (PPO/GSPO ratio above
	// the range, CISPO weight capped, DPPO masked with A > 0), −1 below
	// (ratio below the range, DPPO masked with A ≤ 0), 0 elsewhere;
	// isClip[t] = +1 where ρ was truncated or masked above ISMax, −1 below
	// ISMin; mismatch[t] = exp(logp − behaviour) − (logp − behaviour) − 1,
	// the k3 estimate of the trainer/sampler mismatch; kl[t] = the k3 term
	// when Beta ≠ 0. RefLogp and KL may be nil when Beta is 0.
	PolicyLoss(out PolicyLossOut, in PolicyLossIn, p PolicyLossParams)

	// AdamW takes one decoupled-weight-decay Adam step on n parameters, as
	// torch.optim.AdamW: p −= lr·wd·p; m = β1·m + (1−β1)·g;
	// v = β2·v + (1−β2)·g²; p −= lr·(m/(1−β1^t)) / (sqrt(v/(1−β2^t)) + eps).
	AdamW(param, grad, m, v Buffer, n int, p AdamWParams)
}

// PolicyLossIn are PolicyLoss's operands: F32 per token except SeqStart
// (I32, NumSeq+1 nondecreasing offsets from 0 to N).
type PolicyLossIn struct {
	Logp, OldLogp, BehaviourLogp, RefLogp, Adv, Weight Buffer
	SeqStart                                           Buffer
	N, NumSeq                                          int
}

// PolicyLossOut are PolicyLoss's per-token outputs (F32, N each); KL may
// be nil when Beta is 0.
type PolicyLossOut struct {
	Loss, DLogp, Clip, ISClip, Mismatch, KL Buffer
}

// PolicyObjective selects PolicyLoss's per-token term.
type PolicyObjective int32

const (
	ObjectivePPO   PolicyObjective = iota // token ratio, PPO clip
	ObjectiveGSPO                         // sequence ratio (geometric mean), PPO clip
	ObjectiveCISPO                        // capped, stop-gradient IS weight × logp
	ObjectiveDPPO                         // prime-rl's default: masked by probability shift, plus KL
)

// ISCorrection selects PolicyLoss's behaviour correction ρ.
type ISCorrection int32

const (
	ISNone             ISCorrection = iota
	ISTokenTruncate                 // ρ_t = clamp(exp(d_t), ISMin, ISMax)
	ISTokenMask                     // ρ_t = exp(d_t), 0 outside [ISMin, ISMax]
	ISSequenceTruncate              // ρ = clamp(exp(Σ d), ISMin, ISMax) for every token of the sequence
	ISSequenceMask                  // ρ = exp(Σ d), 0 outside [ISMin, ISMax]
)

// Sequence reports whether the correction is one weight per sequence.
func (c ISCorrection) Sequence() bool { return c == ISSequenceTruncate || c == ISSequenceMask }

// PolicyLossParams configures PolicyLoss.
type PolicyLossParams struct {
	Objective       PolicyObjective
	EpsLow, EpsHigh float32 // PPO/GSPO clip range [1−EpsLow, 1+EpsHigh]; CISPO's cap is EpsHigh
	Beta            float32 // k3 KL coefficient; 0 disables the KL term
	// DPPO: the probability-shift band, the advantage's and the squared
	// log-ratio's coefficients (prime-rl's dppo_mask_low/high, adv_tau,
	// kl_tau).
	MaskLow, MaskHigh, AdvTau, KLTau float32
	IS                               ISCorrection
	ISMin, ISMax                     float32 // 0 and +Inf leave that side open
}

// AdamWParams configures one AdamW step; Step counts from 1.
type AdamWParams struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	Step                               int
}
