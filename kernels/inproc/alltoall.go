package inproc

import (
	"errors"
	"fmt"
	"slices"

	"github.com/grpo-dev/grpo/kernels"
)

// AllToAll exchanges rows through host memory: each rank contributes its
// send rows with both count lists, and once all have arrived (and their
// counts agree: round.check) copies out the rows each rank addressed to
// it, in rank order, over the head of its recv buffer. On a backend whose
// memory the host addresses (kernels.HostFuncs: emu) the exchange is
// queued in its stream order, so a graph capture records it and the
// ranks meet at each replay; elsewhere (cpu) the rows travel by Download
// and Upload.
func (m *member) AllToAll(send kernels.Buffer, sendRows []int, recv kernels.Buffer, recvRows []int, width int) error {
	if err := m.checkAllToAll(send, sendRows, recv, recvRows, width); err != nil {
		m.g.Abort(err)
		return errors.Join(err, kernels.ErrCollectiveAborted)
	}
	sendRows, recvRows = slices.Clone(sendRows), slices.Clone(recvRows)
	if hf, ok := m.b.(kernels.HostFuncs); ok && hf.HostMemory() {
		return hf.HostFunc([]kernels.Buffer{send, recv}, func(mem [][]float32) error {
			return m.allToAll(slices.Clone(mem[0]), sendRows, mem[1], recvRows, width)
		})
	}
	host := make([]float32, send.Len())
	m.b.Download(host, send)
	if err := m.b.Sync(); err != nil {
		m.g.Abort(fmt.Errorf("inproc: rank %d: its backend failed before the all-to-all: %w", m.rank, err))
		return fmt.Errorf("inproc: rank %d: %w", m.rank, err)
	}
	out := make([]float32, recv.Len())
	m.b.Download(out, recv) // the tail past the rows is kept
	if err := m.allToAll(host, sendRows, out, recvRows, width); err != nil {
		return err
	}
	m.b.Upload(recv, out)
	return nil
}

// allToAll is the exchange over host memory: send is this rank's own
// copy of its rows (the peers read it after the call returns here), out
// receives the rows addressed to this rank over its head.
func (m *member) allToAll(send []float32, sendRows []int, out []float32, recvRows []int, width int) error {
	r, err := m.g.exchange(m.rank, "all-to-all", width, part{values: send, sendRows: sendRows, recvRows: recvRows})
	if err != nil {
		return err
	}
	at := 0
	for from, p := range r.parts {
		start := 0 // rank from's rows for this rank follow those for lower ranks
		for to := range m.rank {
			start += p.sendRows[to]
		}
		n := recvRows[from] * width
		copy(out[at:at+n], p.values[start*width:start*width+n])
		at += n
	}
	return nil
}

// checkAllToAll is what one rank can check of its own call: F32 buffers
// and kernels.CheckAllToAll.
func (m *member) checkAllToAll(send kernels.Buffer, sendRows []int, recv kernels.Buffer, recvRows []int, width int) error {
	if send.DType() != kernels.F32 || recv.DType() != kernels.F32 {
		return fmt.Errorf("inproc: rank %d: all-to-all of %v rows into %v: want F32 buffers", m.rank, send.DType(), recv.DType())
	}
	if err := kernels.CheckAllToAll(m.g.size, send.Len(), sendRows, recv.Len(), recvRows, width); err != nil {
		return fmt.Errorf("inproc: rank %d: %w", m.rank, err)
	}
	return nil
}

// ExchangeCounts hands every rank the block of counts each rank addressed
// to it.
func (m *member) ExchangeCounts(counts []int) ([]int, error) {
	if err := kernels.CheckCounts(m.g.size, counts); err != nil {
		err = fmt.Errorf("inproc: rank %d: %w", m.rank, err)
		m.g.Abort(err)
		return nil, errors.Join(err, kernels.ErrCollectiveAborted)
	}
	r, err := m.g.exchange(m.rank, "counts", len(counts), part{counts: slices.Clone(counts)})
	if err != nil {
		return nil, err
	}
	k := len(counts) / m.g.size
	out := make([]int, 0, len(counts))
	for _, p := range r.parts {
		out = append(out, p.counts[m.rank*k:(m.rank+1)*k]...)
	}
	return out, nil
}
