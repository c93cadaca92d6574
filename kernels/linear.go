package kernels

// LinearOps are the ops of a linear-attention token mixer: the gated
// DeltaNet layers that make up three of every four layers of Qwen3.5 and
// Qwen3.6 (and of Qwen3-Next). Such a layer keeps no KV cache; each
// sequence carries a fixed-size state instead: the last kernel−1 inputs
// of its causal convolution and, per value head, a dimK × dimV matrix
// that the gated delta rule updates token by token.
//
// # Runs
//
// A packed batch of nTok tokens is cut into runs: the consecutive tokens
// of one sequence, in position order. runs (I32, nRuns × 4) describes
// run r as
//
//	runs[4r+0]  first token (row of the batch)
//	runs[4r+1]  number of tokens (≥ 1)
//	runs[4r+2]  init: the state slot the run starts from, or −1 for a
//	            fresh sequence (zero state)
//	runs[4r+3]  final: the state slot that receives the state after the
//	            run's last token, or −1 for none
//
// So prefill is (init −1, final slot), a decode step or a later turn is
// (init slot, final slot) with the same slot, and a group's rollouts
// continuing a shared prompt are runs whose init is the prompt's slot.
// Runs cover disjoint tokens. Within one call a slot that some run writes
// as final is read as init by no other run (a run may read and write its
// own slot: it reads before it writes); several runs may read one slot,
// no two write one.
//
// Rows of tokens that no run covers are not computed: what an op leaves
// in them is unspecified.
//
// States: convState is slots × (kernel−1) × channels (the inputs before
// the run's first token, oldest first), state is slots × nHeadV × dimK ×
// dimV. Both are F32; the number of slots is the operand's length over a
// slot's, and a state operand may be nil when every run's init and final
// are −1. A backward reads the initial states the forward read, so a run
// whose final slot is its init slot cannot be differentiated (training
// never does that).
//
// A backward's dConvState and dState have the states' layouts. On entry
// they hold, at each run's final slot, the gradient with respect to the
// state the forward wrote there (zeros when nothing downstream read it);
// the backward adds the gradient with respect to each run's initial
// state into its init slot (runs sharing an init slot sum). They may be
// nil when every run has init −1 and final −1.
type LinearOps interface {
	// CausalConv1D is the depthwise causal convolution with SiLU of a
	// DeltaNet or Mamba-2 layer: for token t at offset i of its run and
	// channel c,
	//   out[t,c] = silu(Σ_{j<kernel} w[c·kernel + j] · u[i − kernel + 1 + j, c] + bias[c])
	// where u[i'] for i' ≥ 0 is x at the run's token i' and for i' < 0 is
	// row kernel−1+i' of convState[init] (zero when init is −1). x and out
	// are nTok × channels; w is channels × kernel (the checkpoint's conv1d
	// weight [channels, 1, kernel]), possibly BF16; bias (channels, the
	// conv1d bias Mamba-2 has and DeltaNet has not) is nil for none, else
	// of w's dtype. kernel ≥ 2 (Qwen3.5's and Nemotron-3's are 4; the
	// CUDA backend takes up to 8). The run's final slot receives the last
	// kernel−1 rows of u (state and tokens together). x and out may each
	// be BF16 (a bf16 model's activations: x read widened, out rounded
	// once at the store); convState stays F32.
	CausalConv1D(out, x, w, bias, convState, runs Buffer, nRuns, nTok, channels, kernel int)

	// CausalConv1DBackward writes dx (nTok × channels, overwritten) from
	// dout through the SiLU (the pre-activation recomputed from x and the
	// initial states, bias included) and the convolution, and moves the
	// conv-state gradients as the LinearOps doc says: the final state's
	// gradient reaches the x rows it was made of, the initial state's is
	// added into dConvState[init]. The weight and bias are frozen: no
	// gradient. dx, dout and x may each be BF16 (read widened, dx rounded
	// once after its whole sum); dConvState stays F32.
	CausalConv1DBackward(dx, dConvState, dout, x, w, bias, convState, runs Buffer, nRuns, nTok, channels, kernel int)

	// GatedDeltaRule is the gated delta rule of a DeltaNet layer over runs.
	// Row t of qkv (nTok × (2·nHeadK·dimK + nHeadV·dimV)) is q | k | v:
	// nHeadK query heads, nHeadK key heads of dimK, nHeadV value heads of
	// dimV. Value head h reads query/key head h / (nHeadV/nHeadK). Per
	// token t and value head h, with q̂ = q/sqrt(Σq² + 1e-6)/sqrt(dimK) and
	// k̂ = k/sqrt(Σk² + 1e-6) (the l2 norm done inside), and S the head's
	// dimK × dimV state (from state[init], or zero):
	//   S ← exp(g[t,h]) · S
	//   S ← S + k̂ ⊗ (beta[t,h] · (v − k̂ᵀS))
	//   out[t,h] = q̂ᵀ S
	// out is nTok × nHeadV × dimV; g (log decay, ≤ 0) and beta are
	// nTok × nHeadV. Arithmetic is f32. A backend may compute a long run
	// in chunks (the chunked form, WY/UT transform per chunk of 64) and
	// a short one token by token; both are this recurrence. qkv and out
	// may each be BF16 (qkv read widened, the l2 norms summed in f32 over
	// the widened values; out rounded once at the store); g, beta and
	// state stay F32.
	GatedDeltaRule(out, qkv, g, beta, state, runs Buffer, nRuns, nTok, nHeadK, nHeadV, dimK, dimV int)

	// GatedDeltaRuleBackward is GatedDeltaRule's backward for the same
	// operands: from dout it writes dqkv (laid out like qkv, overwritten;
	// through the l2 norms, query/key heads summed over the value heads
	// that read them), dg and dbeta (nTok × nHeadV, overwritten), and
	// moves the state gradients through dState as the LinearOps doc says.
	// dqkv, dout and qkv may each be BF16 (read widened; dqkv rounded once
	// after its whole sum: a q/k column after its value heads' sum and the
	// l2 norm); dg, dbeta and dState stay F32.
	GatedDeltaRuleBackward(dqkv, dg, dbeta, dState, dout, qkv, g, beta, state, runs Buffer, nRuns, nTok, nHeadK, nHeadV, dimK, dimV int)

	// DeltaGates computes a DeltaNet layer's per-head decay and write
	// strength from its in_proj_a and in_proj_b outputs (rows × heads):
	//   g[r,h]    = −exp(aLog[h]) · softplus(a[r,h] + dtBias[h])
	//   beta[r,h] = sigmoid(b[r,h])
	// in f32 (softplus(x) = x above 20, as torch's). aLog and dtBias
	// (heads) may be BF16, both or neither.
	DeltaGates(g, beta, a, b, aLog, dtBias Buffer, rows, heads int)

	// DeltaGatesBackward writes da and db (rows × heads, overwritten) from
	// dg and dbeta; aLog and dtBias are frozen.
	DeltaGatesBackward(da, db, dg, dbeta, a, b, aLog, dtBias Buffer, rows, heads int)

	// GatedRMSNorm is the gated norm that ends a DeltaNet layer: for each
	// of rows rows of width dim,
	//   out[r] = w · (x[r] / sqrt(mean(x[r]²) + eps)) · silu(z[r])
	// (w, possibly BF16, is ones-initialised, not zero-centred; a layer
	// applies it per value head: rows = nTok·nHeadV, dim = dimV), rstd
	// (if not nil) receiving the per-row 1/rms. out may alias x. out, x
	// and z may each be BF16 (read widened, out rounded once at the
	// store); rstd stays F32.
	GatedRMSNorm(out, rstd, x, z, w Buffer, rows, dim int, eps float32)

	// GatedRMSNormBackward writes dx and dz (rows × dim, overwritten) from
	// dy, the forward's x, z and rstd; w is frozen. dx, dz, dy, x and z
	// may each be BF16 (read widened, dx and dz rounded once at the store).
	GatedRMSNormBackward(dx, dz, dy, x, z, w, rstd Buffer, rows, dim int)
}
