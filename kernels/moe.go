package kernels

// MoEOps are the ops of a mixture-of-experts MLP (Qwen3-MoE): routing,
// grouping the tokens by expert, one GEMM per projection over every
// expert's rows at once, and combining the experts' outputs with the
// routing weights — each with its backward. The grouping is computed on
// the device, so a layer never waits for the host to learn how many
// tokens each expert got.
//
// Shapes: n tokens, nExperts experts, topK experts per token. An
// assignment is a (token t, choice j) pair, flattened as t·topK + j; the
// grouped order lists the n·topK assignments expert by expert (expert 0's
// first, within an expert by assignment index, so the order is
// deterministic), and a permuted row is an assignment's place in it.
type MoEOps interface {
	MXFP4Ops

	// MoERoute routes each token: p = softmax(logits[t]) over nExperts in
	// f32, the topK largest probabilities (ties go to the lower expert
	// index), in decreasing order, into experts[t·topK + j] and
	// weights[t·topK + j]; with normTopK the weights are divided by their
	// sum. With replay set, experts is an input (the experts recorded when
	// the token was sampled) and only the weights are computed: p at those
	// experts, renormalised over them with normTopK.
	MoERoute(weights, experts, logits Buffer, n, nExperts, topK int, normTopK, replay bool)

	// MoERouteBackward is MoERoute's backward for fixed experts: given
	// dweights (n × topK) it writes dlogits (n × nExperts, overwritten),
	// the gradient through the softmax (and the renormalisation). dprobs,
	// when not nil, is a gradient with respect to every token's whole
	// probability vector (nExperts values, the same for every token: the
	// load-balancing loss's), added before the softmax's backward.
	MoERouteBackward(dlogits, dweights, dprobs, logits, experts Buffer, n, nExperts, topK int, normTopK bool)

	// MoERouteSigmoid routes each token as GLM-4.5 and DeepSeek-V3 do
	// (SigmoidRouting): s = sigmoid(logits[t]) in f32; the choice score
	// c = s + bias (bias, nExperts f32, nil for none, chooses and never
	// weighs); with r.Groups > 1 the experts split into r.Groups equal
	// groups of consecutive experts, each scored by the sum of its two
	// largest c, and only the r.TopKGroups best groups stay eligible (the
	// others' c counts as 0); the topK largest eligible c (ties to the
	// lower expert index), in decreasing order, into experts; weights =
	// s at those experts, divided by their sum (+1e-20) with r.NormTopK,
	// times r.Scale. With replay, experts is an input and only the
	// weights are computed.
	MoERouteSigmoid(weights, experts, logits, bias Buffer, n, nExperts, topK int, r SigmoidRouting, replay bool)

	// MoERouteSigmoidBackward is MoERouteSigmoid's backward for fixed
	// experts: given dweights (n × topK) it writes dlogits (n × nExperts,
	// overwritten; 0 at the experts a token did not use), through the
	// scale, the renormalisation and the sigmoid.
	MoERouteSigmoidBackward(dlogits, dweights, logits, experts Buffer, n, nExperts, topK int, r SigmoidRouting)

	// MoEGroup computes the grouped order of the assignments in experts
	// (n × topK, each in [0, nExperts)): offsets (nExperts+1) with
	// offsets[e] the first permuted row of expert e and offsets[nExperts] =
	// n·topK; tokens (n·topK) the token of each permuted row; and rows
	// (n·topK) the permuted row of each assignment.
	MoEGroup(offsets, tokens, rows, experts Buffer, n, nExperts, topK int)

	// GroupedMatMul multiplies each expert's rows by its own matrix: for
	// every expert e and permuted row r in [offsets[e], offsets[e+1]),
	// C[r] = alpha·A[r]·op(B_e) + beta·C[r], where A is rows × k, C rows ×
	// n, and B holds nExperts matrices end to end, each k × n (n × k when
	// transB), possibly BF16. rows is the extent of A and C; the experts'
	// rows run from offsets[0] (usually 0) to offsets[nExperts] ≤ rows,
	// and rows outside them are left as they were — so offsets may be a
	// run of a grouping over more experts, as an expert-parallel rank
	// runs its own experts over rows gathered from every rank. A and C
	// (a bf16 model's activations) may each be F32 or BF16, with B of
	// either dtype: read widened, and a BF16 C holds alpha·A·op(B) +
	// beta·C computed in f32 and rounded once, at the store.
	GroupedMatMul(c, a, b, offsets Buffer, rows, nExperts, n, k int, transB bool, alpha, beta float32)

	// GroupedMatMulTN is the per-expert weight gradient: for every expert
	// e, C_e = alpha·A_eᵀ·B_e + beta·C_e, where A_e (count_e × m) and B_e
	// (count_e × n) are expert e's rows of A (rows × m) and B (rows × n),
	// and C holds nExperts m × n matrices end to end. An expert with no
	// rows gets C_e = beta·C_e. A and B may each be F32 or BF16 (read
	// widened); C is F32.
	GroupedMatMulTN(c, a, b, offsets Buffer, rows, nExperts, m, n int, alpha, beta float32)

	// MoECombine sums each token's assignments: out[t] = Σ_j w_j·x[rows[t·topK
	// + j]] over cols columns, with w = weights (n × topK), or 1 when
	// weights is nil (the backward of gathering a token's row to every
	// assignment). out is overwritten. x and out may each be BF16 (the f32
	// sum rounded once at the store); weights is F32.
	MoECombine(out, x, weights, rows Buffer, n, topK, cols int)

	// MoECombineBackward is MoECombine's backward: dx[rows[t·topK + j]] =
	// weights[t·topK + j]·dout[t] (dx is rows × cols, every row written) and
	// dweights[t·topK + j] = dout[t]·x[rows[t·topK + j]]. dx, dout and x
	// may each be BF16 (a BF16 dx rounded once at the store); weights and
	// dweights are F32.
	MoECombineBackward(dx, dweights, dout, x, weights, rows Buffer, n, topK, cols int)

	// ClampedSwiGLU is gpt-oss's expert activation (ClampedGLU): with
	// g = min(gate, Limit) and u = clamp(up, −Limit, Limit), out = (u + 1)·
	// g·σ(Alpha·g), elementwise over n values. Each of out, gate and up may
	// be F32 or BF16 (read widened, computed in f32, a BF16 out rounded
	// once).
	ClampedSwiGLU(out, gate, up Buffer, n int, c ClampedGLU)

	// ClampedSwiGLUBackward is its backward: dgate = dy·(u + 1)·σ(αg)·(1 +
	// αg·(1 − σ(αg))) where gate ≤ Limit (0 above), dup = dy·g·σ(αg) where
	// −Limit ≤ up ≤ Limit (0 outside), as torch's clamp passes gradient at
	// its bounds. dgate and dup may alias gate and up (of their dtype).
	// Each of the five operands may be F32 or BF16, as ClampedSwiGLU's.
	ClampedSwiGLUBackward(dgate, dup, dy, gate, up Buffer, n int, c ClampedGLU)

	// GroupedAddBias adds each expert's bias to its rows: for every expert
	// e and permuted row r in [offsets[e], offsets[e+1]), y[r] += bias[e]
	// over cols columns; y is rows × cols, bias nExperts × cols (f32), rows
	// its extent, the experts' rows a run within it as GroupedMatMul's
	// (gpt-oss's per-expert gate_up and down biases). y may be BF16: the
	// sum is f32, rounded once at the store.
	GroupedAddBias(y, bias, offsets Buffer, rows, nExperts, cols int)
}
