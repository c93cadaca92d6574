package cuda

// Attention's work depends on each token's position (a token attends to
// the keys 0..pos of its sequence), and the positions live on the device.
// To count that work (Counts.FLOPs) without reading the device back, a
// buffer keeps the host's copy of the values UploadI32 wrote into it, and
// AddI32 — how the static decode step advances positions — keeps it
// current where both operands have one. No other kernel writes positions
// (sampling's tokens and MoE grouping's offsets are I32 buffers attention
// never reads as positions).
// While a graph is captured nothing runs (on a GPU), so the copy would
// run ahead of the device; AddI32 drops it instead, and a replayed graph
// counts the FLOPs it counted when captured (Counter.LaunchGraph).

// addedOnHost is a + x on the host copies, nil unless both have one and
// the sum runs now (not into a capture).
func addedOnHost(a, x *buffer, n int, eager bool) []int32 {
	if !eager || len(a.host) < n || len(x.host) < n {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = a.host[i] + x.host[i]
	}
	return out
}

// visibleKeys is Σ (pos[t] + 1) over nTok tokens: the (query, key) pairs
// of causal attention per head. Without a host copy of pos it is
// nTok·maxLen, every position a row could see: an upper bound.
func visibleKeys(pos *buffer, nTok, maxLen int) int64 {
	if len(pos.host) < nTok {
		return int64(nTok) * int64(maxLen)
	}
	var n int64
	for _, p := range pos.host[:nTok] {
		n += int64(p) + 1
	}
	return n
}
