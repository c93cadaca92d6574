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
	// alias dy when accumulate is false.
	RMSNormBackward(dx, dy, x, w, rstd Buffer, rows, dim int, accumulate bool)

	// SwiGLUBackward computes dgate = dy·up·silu'(gate) and dup =
	// dy·silu(gate), with silu'(g) = σ(g)·(1 + g·(1 − σ(g))). dgate and
	// dup may alias gate and up respectively.
	SwiGLUBackward(dgate, dup, dy, gate, up Buffer, n int)

	// SigmoidGateBackward is SigmoidGate's backward: dx = dy·σ(gate) and
	// dgate = dy·x·σ(gate)·(1 − σ(gate)). Each element is read before it
	// is written, so dx may alias dy or x and dgate may alias gate (the
	// model overwrites saved activations with their gradients).
	SigmoidGateBackward(dx, dgate, dy, x, gate Buffer, n int)

	// AttentionBackward is the backward of Attention for the same operands:
	// given dout, the forward's out and lse, it writes dq (nTok × nHead ×
	// headDim, overwritten) and adds the key and value gradients into dk and
	// dv, laid out like the caches (NumBlocks × BlockSize × nKV × headDim,
	// through the same pages; the caller zeroes them). Probabilities are
	// recomputed from q, k and lse. A block shared by several sequences
	// gets the sum of their gradients. The caches are F32: training's
	// contiguous cache is f32 on every backend (Description.KVCache is
	// the sampler's).
	AttentionBackward(dq, dk, dv, dout, out, lse, q, kCache, vCache, seq, pos Buffer, pages KVPages, nTok, nHead, nKV, headDim int, scale float32)

	// ScatterRows copies row i of src (n × cols) into row idx[i] of out,
	// for i < n; rows of out that no index names keep their values. The
	// indices must be distinct. It is GatherRows' backward: the training
	// head scores only the rows that carry loss weight, and their gradient
	// goes back to those rows of the residual stream.
	ScatterRows(out, src, idx Buffer, n, cols int)

	// LogSoftmaxGatherBackward computes, for each row, dlogits[r] =
	// dlogp[r]·(onehot(target[r]) − softmax(logits[r])): the gradient of
	// Σ_r dlogp[r]·logp[r] with logp from LogSoftmaxGather.
	LogSoftmaxGatherBackward(dlogits, dlogp, logits, target Buffer, rows, vocab int)

	// PolicyLoss computes the clipped policy-gradient loss with an optional
	// k3 KL penalty, per token t < n:
	//   ratio = exp(logp − oldLogp)
	//   pg    = −min(ratio·adv, clip(ratio, 1−EpsLow, 1+EpsHigh)·adv)
	//   kl    = exp(refLogp − logp) − (refLogp − logp) − 1   (only if Beta ≠ 0)
	//   loss[t] = weight[t]·(pg + Beta·kl)
	// and dlogp[t] = ∂loss[t]/∂logp[t]. weight carries the mask and the
	// aggregation's normalisation, so Σ loss is the batch loss. Where the
	// clipped term is the minimum and the ratio lies outside the clip
	// range, pg's gradient is zero, as in PPO.
	//
	// It also writes the per-token metrics the caller would otherwise
	// recompute from downloaded log-probs, from the same float64 values the
	// loss uses: clip[t] = +1 where that clip cuts the gradient above
	// (ratio > 1+EpsHigh), −1 where it cuts it below (ratio < 1−EpsLow), 0
	// elsewhere; and, when Beta ≠ 0, kl[t] = the k3 term, unweighted.
	// refLogp and kl may be nil when Beta is 0 (kl is not written then).
	PolicyLoss(loss, dlogp, kl, clip, logp, oldLogp, refLogp, adv, weight Buffer, n int, p PolicyLossParams)

	// AdamW takes one decoupled-weight-decay Adam step on n parameters, as
	// torch.optim.AdamW: p −= lr·wd·p; m = β1·m + (1−β1)·g;
	// v = β2·v + (1−β2)·g²; p −= lr·(m/(1−β1^t)) / (sqrt(v/(1−β2^t)) + eps).
	AdamW(param, grad, m, v Buffer, n int, p AdamWParams)
}

// PolicyLossParams configures PolicyLoss.
type PolicyLossParams struct {
	EpsLow, EpsHigh float32 // clip range [1−EpsLow, 1+EpsHigh]
	Beta            float32 // KL coefficient; 0 disables the KL term
}

// AdamWParams configures one AdamW step; Step counts from 1.
type AdamWParams struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	Step                               int
}
