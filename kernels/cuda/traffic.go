package cuda

import "strings"

// Traffic is a count of the activation bytes ops move: for every op issued
// while it is open (Backend.CountTraffic), each of its operands that is
// not tagged as weights (TagWeights) adds the bytes its shape spans — the
// elements the op checks it for, times its dtype's size — under "Op/operand";
// an operand checked for any size (0) adds its whole length. It is the
// traffic an op cannot avoid (each operand read or written once; what a
// kernel re-reads from L2, such as attention's K/V tiles, is the traffic
// walk's, kernels/emu TestAttentionTrafficTable), so two paths of one op
// compare by what they store between ops. A MatMul with bf16 weights and
// an f32 A also counts the cast's bf16 copy of A, written and read back
// ("MatMul/A cast"), and a GEMM (grouped too) with beta ≠ 0 the read of C
// ("MatMul/C beta", at C's dtype: 2 bytes an element for a bf16 C); one
// with f32 weights and a bf16 A or C its f32 copies, each written and
// read ("MatMul/A widen", "MatMul/C f32", "MatMul/C widen"); a
// GatherRows from a table that is not weights (the MoE's gather of its
// input rows) every row it reads, not the one row it checks the table for.
type Traffic map[string]int64

// Total is the sum over every op and operand.
func (t Traffic) Total() int64 {
	var n int64
	for _, v := range t {
		n += v
	}
	return n
}

// CountTraffic starts a count of the ops' operand bytes (Traffic) and
// returns it; every op issued until StopTraffic adds to it.
func (b *Backend) CountTraffic() Traffic {
	b.traffic = Traffic{}
	return b.traffic
}

// StopTraffic ends the count CountTraffic started.
func (b *Backend) StopTraffic() { b.traffic = nil }

// operandTraffic adds operand name of op, checked for n elements, to the
// open count.
func (b *Backend) operandTraffic(op, name string, x *buffer, n int) {
	if op == "Free" || op == "TagWeights" || x.ptr == 0 || b.dev.isWeight(x.ptr) ||
		strings.HasSuffix(name, "Cache") || strings.HasSuffix(name, " Y") {
		return // counted by cacheTraffic, partTraffic
	}
	if n == 0 {
		n = x.n
	}
	b.traffic[op+"/"+name] += int64(n * x.dt.Size())
}

// addTraffic adds bytes under key to the open count.
func (b *Backend) addTraffic(key string, bytes int) {
	if b.traffic != nil {
		b.traffic[key] += int64(bytes)
	}
}

// cacheTraffic counts a K or V cache pair, which ops check for one row of
// width elements, as the nTok rows of each the op's tokens read or write.
func (b *Backend) cacheTraffic(op string, k *buffer, nTok, width int) {
	if b.traffic != nil {
		b.traffic[op+"/caches"] += int64(2 * nTok * width * k.dt.Size())
	}
}

// partTraffic counts a LoRA part's Y, which ops check as the whole fused
// output, as its own rows × out columns, read and written (y += …).
func (b *Backend) partTraffic(op string, y *buffer, rows, out int) {
	if b.traffic != nil && y.ptr != 0 {
		b.traffic[op+"/parts' Y"] += int64(2 * rows * out * y.dt.Size())
	}
}

// betaTraffic counts a GEMM's read of its output C (n elements) when beta
// is not 0, as MatMul's "C beta".
func (b *Backend) betaTraffic(op string, c *buffer, n int, beta float32) {
	if beta != 0 && b.traffic != nil && !b.dev.isWeight(c.ptr) {
		b.traffic[op+"/C beta"] += int64(n * c.dt.Size())
	}
}

// gatherTraffic counts a GatherRows' n rows of cols read from an
// activation table, which buf counted as one row (a weight table, the
// embedding, counts none).
func (b *Backend) gatherTraffic(op string, t *buffer, n, cols int) {
	if n > 1 && b.traffic != nil && !b.dev.isWeight(t.ptr) {
		b.traffic[op+"/table"] += int64((n - 1) * cols * t.dt.Size())
	}
}
