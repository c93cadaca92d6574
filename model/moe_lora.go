package model

import "github.com/grpo-dev/grpo/kernels"

// ExpertLoRA is one adapted projection (gate_proj, up_proj or down_proj)
// of every expert of a sparse layer, stacked so that its shrink and expand
// are one grouped GEMM each: A is nExperts × Rank × in and B nExperts ×
// out × Rank, expert e's PEFT lora_A and lora_B at e·Rank·in and
// e·out·Rank. DA and DB, laid out alike, receive gradients during
// Backward (nil for inference). Under expert parallelism (moe_ep.go) they
// stack this rank's experts only (Model.LocalExperts), the first at 0.
type ExpertLoRA struct {
	A, B, DA, DB kernels.Buffer
	Rank         int
	Scale        float32
}

// ExpertAdapter is an Adapter that also adapts the experts of sparse
// layers. An Adapter that does not implement it leaves the experts bare
// (attention-only adapters).
type ExpertAdapter interface {
	Adapter
	ExpertLoRA(layer int, p Proj) *ExpertLoRA
}

func (m *Model) expertLoRA(layer int, p Proj) *ExpertLoRA {
	if ea, ok := m.Adapter.(ExpertAdapter); ok {
		return ea.ExpertLoRA(layer, p)
	}
	return nil
}

// expertProject adds Scale·(x·A_eᵀ)·B_eᵀ to out (rows × out) for each
// permuted row of expert e of ne (offsets' experts: all, or this rank's
// under expert parallelism), keeping x·A_eᵀ in xa (rows × Rank).
func (m *Model) expertProject(lr *ExpertLoRA, p Proj, out, x, xa, offsets kernels.Buffer, rows, ne int) {
	be, c := m.Backend, m.Config
	in, o := c.ExpertDims(p)
	be.GroupedMatMul(xa, x, lr.A, offsets, rows, ne, lr.Rank, in, true, 1, 0)
	be.GroupedMatMul(out, xa, lr.B, offsets, rows, ne, o, lr.Rank, true, lr.Scale, 1)
}

// expertProjectBackward is expertProject's backward: given dy (rows ×
// out) it adds Scale·(dy·B_e)·A_e into dx (when not nil) and the
// adapter's gradients into DA and DB; dyB (rows × Rank) receives dy·B_e.
func (m *Model) expertProjectBackward(lr *ExpertLoRA, p Proj, dx, dy, x, xa, dyB, offsets kernels.Buffer, rows, ne int) {
	be, c := m.Backend, m.Config
	in, o := c.ExpertDims(p)
	be.GroupedMatMul(dyB, dy, lr.B, offsets, rows, ne, lr.Rank, o, false, 1, 0)
	if dx != nil {
		be.GroupedMatMul(dx, dyB, lr.A, offsets, rows, ne, in, lr.Rank, false, lr.Scale, 1)
	}
	if lr.DB != nil {
		be.GroupedMatMulTN(lr.DB, dy, xa, offsets, rows, ne, o, lr.Rank, lr.Scale, 1)
	}
	if lr.DA != nil {
		be.GroupedMatMulTN(lr.DA, dyB, x, offsets, rows, ne, lr.Rank, in, lr.Scale, 1)
	}
}
