package kernels

// SSMOps are the ops of a Mamba-2 token mixer (the M layers of
// Nemotron-3), over the runs and state slots LinearOps defines: the
// causal convolution is LinearOps.CausalConv1D with its bias; the state
// space scan is here.
//
// # The scan
//
// A row of xBC (nTok × (nHeads·headDim + 2·nGroups·stateSize), the conv's
// output) is x | B | C: nHeads heads of headDim, then nGroups groups of
// stateSize for B and for C. Head h reads group h / (nHeads/nGroups). Per
// token t and head h, with
//
//	dt = softplus(dtRaw[t,h] + dtBias[h])   (torch's: linear above 20)
//	A  = −exp(aLog[h])
//
// and S the head's headDim × stateSize state (from state[init], or zero):
//
//	S      ← exp(dt·A) · S + dt · x[t,h] ⊗ B[t,g]
//	y[t,h] = S · C[t,g] + d[h] · x[t,h]
//
// y is nTok × nHeads × headDim; dtRaw is nTok × nHeads; aLog, dtBias and
// d are nHeads, F32. dt has no lower clamp: that is what the fused
// kernels (mamba-ssm's selective_state_update and chunked scan, vLLM's
// mamba_mixer2) compute; transformers' slow path for Nemotron-H clamps dt
// below at time_step_min (1e-3) on its decode step, which changes a
// token only where softplus falls under 1e-3. state is slots × nHeads ×
// headDim × stateSize, F32. Arithmetic is f32.
//
// A bf16 model's activations between ops may be BF16: the scan's xBC, y,
// dy and dxBC and the norm's x, z, out, dy, dx and dz, each on its own.
// An op reads a BF16 operand widened and stores a BF16 output rounded to
// nearest even once (dxBC's B and C columns after the sum over a group's
// heads); dtRaw, ddtRaw, the states and rstd stay F32.
type SSMOps interface {
	// SSDScan runs the scan over the runs, writing y and each run's final
	// state. A decode step is the same call with runs of one token. xBC
	// and y may be BF16.
	SSDScan(y, xBC, dtRaw, aLog, dtBias, d, state, runs Buffer, nRuns, nTok, nHeads, headDim, nGroups, stateSize int)

	// SSDScanBackward is SSDScan's backward for the same operands: from dy
	// it writes dxBC (laid out like xBC, overwritten; B and C summed over
	// the heads of their group) and ddtRaw (nTok × nHeads, overwritten,
	// through the softplus), and moves the state gradients through dState
	// as LinearOps' doc says. aLog, dtBias and d are frozen. dy, xBC and
	// dxBC may be BF16.
	SSDScanBackward(dxBC, ddtRaw, dState, dy, xBC, dtRaw, aLog, dtBias, d, state, runs Buffer, nRuns, nTok, nHeads, headDim, nGroups, stateSize int)

	// GroupedGatedRMSNorm is the gated norm that ends a Mamba-2 layer
	// (transformers' MambaRMSNormGated with group_size): the gate goes in
	// before the norm, and each row of width dim is normalised in groups
	// groups of dim/groups columns (Mamba-2's n_groups): with u = x·silu(z),
	//   out[r, k·gs + i] = w[k·gs + i] · u[r, k·gs + i] / sqrt(mean_i(u[r, k·gs + i]²) + eps)
	// x, z and out are rows × dim; w (dim, possibly BF16) is
	// ones-initialised; rstd (if not nil, rows × groups) receives each
	// group's 1/rms. out may alias x. x, z and out may be BF16. (LinearOps.
	// GatedRMSNorm is the other order: norm, then gate.)
	GroupedGatedRMSNorm(out, rstd, x, z, w Buffer, rows, dim, groups int, eps float32)

	// GroupedGatedRMSNormBackward writes dx and dz (rows × dim,
	// overwritten) from dy, the forward's x, z and rstd; w is frozen. dx,
	// dz, dy, x and z may be BF16.
	GroupedGatedRMSNormBackward(dx, dz, dy, x, z, w, rstd Buffer, rows, dim, groups int)
}
