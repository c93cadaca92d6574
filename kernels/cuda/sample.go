package cuda

import (
	"fmt"
	"unsafe"

	"github.com/grpo-dev/grpo/kernels"
)

// sampleParamWords is the per-row layout sample_f32 reads from its params
// operand: {u, temperature, top_p, min_p, top_k}, all float64 (top_k is
// exact as a double up to 2⁵³).
const sampleParamWords = 5

// Sample stages the host's draws and parameters (five doubles per row) in
// pooled scratch, then launches sample_f32, one block per row. The upload
// is staged, so the host slices may be reused on return; the pool
// hands the scratch to later ops only in stream order, after the kernel
// has read it.
func (b *Backend) Sample(token, logprob, logits kernels.Buffer, rows, vocab int, u []float64, p []kernels.SampleParams) {
	const op = "Sample"
	kernels.CheckSampleArgs(b.Name(), rows, u, p)
	i32(op, rows, vocab, rows*vocab)
	if vocab <= 0 {
		panic(fmt.Sprintf("cuda: Sample: vocab %d", vocab))
	}
	t := b.buf(op, "token", token, rows, kernels.I32)
	lp := b.buf(op, "logprob", logprob, rows, kernels.F32)
	lg := b.buf(op, "logits", logits, rows*vocab, kernels.F32)
	if rows == 0 || !usable(t, lp, lg) {
		return
	}
	host := make([]float64, sampleParamWords*rows)
	for r, q := range p {
		// top_k ≥ vocab keeps every candidate, as 0 does; clamping keeps
		// the double exact and the kernel's int conversion in range.
		host[5*r], host[5*r+1], host[5*r+2], host[5*r+3], host[5*r+4] =
			u[r], q.Temperature, q.TopP, q.MinP, float64(min(q.TopK, vocab))
	}
	bytes := 8 * len(host)
	params, ok := b.scratch(bytes)
	if !ok {
		return
	}
	defer b.putScratch(params, bytes)
	b.upload(params, unsafe.Pointer(&host[0]), bytes)
	b.launch("sample_f32", D1(rows), D1(warpRound(vocab, sampleMaxBlock)), 0, t.ptr, lp.ptr, lg.ptr, params, int32(rows), int32(vocab))
}
