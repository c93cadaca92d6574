package kernels

// SampleOps draw tokens from logits on the device, so a sampler downloads
// one token id and one log-prob per sequence instead of a vocabulary-wide
// row of floats per decode step.
type SampleOps interface {
	// Sample draws one token per row of logits (rows × vocab) and writes
	// it to token[r] (I32) with its raw log-prob to logprob[r] (F32). Row
	// r uses the parameters p[r] and the uniform draw u[r] ∈ [0, 1); both
	// are host slices of length rows, because the caller keeps the random
	// streams (one per sequence, so a token does not depend on the batch)
	// and rows of one batch may be sampled differently (eval and training
	// sequences, or different temperatures, share decode steps). They are
	// float64 so that every backend sees the caller's exact values.
	//
	// Per row, with x the logits row and m = max x:
	//
	//   - logprob[r] = x[t] − m − log Σ_i exp(x[i] − m), the log-softmax of
	//     the raw row (temperature 1, nothing truncated) at the chosen t,
	//     accumulated in float64 and rounded to float32 once. It is what
	//     the trainer's forward recomputes, so on-policy ratios are 1.
	//   - Temperature 0: t is the argmax, ties to the lowest id; u[r] is
	//     not read.
	//   - Otherwise the candidates are the tokens with s_i = (x[i] − m)/T
	//     finite and, when MinP > 0, s_i ≥ log(MinP) (p_i ≥ MinP·p_max), each
	//     with weight w_i = exp(s_i) in float64. When TopK > 0 or TopP < 1
	//     the candidates are ordered by (w desc, id asc); TopK keeps the
	//     first TopK of them, then TopP keeps the shortest prefix of those
	//     whose cumulative weight, summed in that order, is ≥ TopP·Z with Z
	//     the kept candidates' total (at least one token, at most TopK).
	//     t is drawn by inverse CDF: the first kept candidate, in that
	//     order, whose cumulative weight exceeds u[r]·Z' (Z' the total of
	//     the kept weights), or the last one if rounding leaves none. When
	//     nothing is truncated the order is plain id order.
	//     This is vLLM v1's order (temperature, min-p, then top-k and
	//     top-p); without truncation it is the same distribution in an order
	//     that needs no sort.
	//   - A row holding NaN or +Inf, or no finite logit at all, has no
	//     distribution: token[r] = −1 and logprob[r] = NaN. The caller
	//     treats −1 as the error flag (the sampler then reads that row to
	//     name the bad value); other rows are sampled as usual.
	//
	// Different backends agree token for token except where u[r]·Z' lies
	// within float64 rounding of a cumulative boundary (their exp and
	// summation order may differ in the last bit). Invalid parameters
	// (see SampleParams.Validate) or len(u) or len(p) ≠ rows panic like a
	// shape mistake: the sampler validates what users give it.
	Sample(token, logprob, logits Buffer, rows, vocab int, u []float64, p []SampleParams)
}
