package kernels

import "fmt"

// AttentionVariant is what an attention op (Attention, AttentionBackward,
// AttentionSharedPrefix) computes beyond plain causal softmax attention.
// Its zero value is plain causal attention, bit for bit; a new variant
// is a new field here, never a new parameter of the ops.
type AttentionVariant struct {
	// Window, when positive, is a sliding window of that many keys: a
	// query at position p attends to positions max(0, p−Window+1)..p,
	// itself included — HF's sliding_window (masking_utils'
	// sliding_window_overlay keeps kv_idx > q_idx − sliding_window). Zero
	// attends to 0..p. Cache rows before a token's window are not read.
	Window int

	// Sinks, when not nil, is one learned logit per query head (F32,
	// nHead) — gpt-oss's attention sinks — that joins each query's
	// softmax as an extra column with no value: with scaled scores x_j,
	// p_j = e^{x_j} / (Σ_k e^{x_k} + e^{s_h}) and out = Σ_j p_j·v_j. The
	// sink is not scaled. The lse Attention returns includes it,
	// log(Σ_k e^{x_k} + e^{s_h}), so AttentionBackward's recomputed
	// probabilities are the forward's. The sinks are frozen: no op
	// returns their gradient (LoRA trains q/k/v/o, never the sinks).
	Sinks Buffer
}

// First is the first position a query at position pos attends to.
func (v AttentionVariant) First(pos int) int {
	if v.Window > 0 {
		return max(0, pos-v.Window+1)
	}
	return 0
}

// Check panics, naming op, unless the variant fits nHead query heads: a
// non-negative window and, when set, an F32 sink per head.
func (v AttentionVariant) Check(op string, nHead int) {
	if v.Window < 0 {
		panic(fmt.Sprintf("kernels: %s: sliding window %d is negative", op, v.Window))
	}
	if v.Sinks != nil && (v.Sinks.DType() != F32 || v.Sinks.Len() != nHead) {
		panic(fmt.Sprintf("kernels: %s: sinks are %v × %d, want f32 × %d (one per query head)", op, v.Sinks.DType(), v.Sinks.Len(), nHead))
	}
}
