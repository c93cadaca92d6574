package cuda

import "slices"

// Attention's work depends on each token's position (a token attends to
// the keys 0..pos of its sequence), and the positions live on the device.
// To count that work (Counts.FLOPs) without reading the device back, the
// backend keeps the host's copy of the I32 values UploadI32 wrote, by
// device address, and AddI32 — how the static decode step advances
// positions — applies itself to the copies where both operands have one.
// No other kernel writes positions (sampling's tokens and MoE grouping's
// offsets are I32 buffers attention never reads as positions). Work that
// depends on the copies is done when the device does the op: at once, or
// for an op captured into a graph at each replay (afterEachRun), so a
// replayed decode step counts its attention at the positions it runs at.

// hostI32 are the host copies, by the device address they start at.
type hostI32 map[DevicePtr][]int32

// keep records vals as the contents of device memory at p, dropping the
// copies it overwrites.
func (h hostI32) keep(p DevicePtr, vals []int32) {
	h.drop(p, p+DevicePtr(4*len(vals)))
	h[p] = vals
}

// drop forgets the copies that overlap [lo, hi).
func (h hostI32) drop(lo, hi DevicePtr) {
	for k, v := range h {
		if k < hi && lo < k+DevicePtr(4*len(v)) {
			delete(h, k)
		}
	}
}

// values are the n values at p, nil where the host has no copy of them.
func (h hostI32) values(p DevicePtr, n int) []int32 {
	if v, ok := h[p]; ok && len(v) >= n {
		return v[:n]
	}
	for k, v := range h {
		if k <= p && p+DevicePtr(4*n) <= k+DevicePtr(4*len(v)) {
			off := int(p-k) / 4
			return v[off : off+n]
		}
	}
	return nil
}

// add keeps out = a + x (n values) where both have copies, and forgets
// out's otherwise.
func (h hostI32) add(out, a, x DevicePtr, n int) {
	av, xv := h.values(a, n), h.values(x, n)
	if av == nil || xv == nil {
		h.drop(out, out+DevicePtr(4*n))
		return
	}
	sum := make([]int32, n)
	for i := range sum {
		sum[i] = av[i] + xv[i]
	}
	h.keep(out, sum)
}

// visibleKeys is Σ (pos[t] + 1) over the nTok positions at p: the
// (query, key) pairs of causal attention per head. Without a host copy it
// is nTok·maxLen, every position a row could see: an upper bound.
func (h hostI32) visibleKeys(p DevicePtr, nTok, maxLen int, v attnVariant) int64 {
	ps := h.values(p, nTok)
	if ps == nil {
		return int64(nTok) * int64(v.span(maxLen))
	}
	var n int64
	for _, x := range ps {
		n += int64(v.span(int(x) + 1))
	}
	return n
}

// afterEachRun calls f now, or, while a graph is captured, after each
// replay of it: f is host bookkeeping of what the op does on the device
// (counting its position-dependent FLOPs, advancing the host's copy).
func (b *Backend) afterEachRun(f func()) {
	if b.capturing != nil {
		b.capturing.host = append(b.capturing.host, f)
		return
	}
	f()
}

// keepUploaded records an upload of src to p.
func (b *Backend) keepUploaded(p DevicePtr, src []int32) {
	if b.host == nil {
		b.host = hostI32{}
	}
	b.host.keep(p, slices.Clone(src))
}
