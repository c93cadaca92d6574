package inproc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/grpo-dev/grpo/kernels"
)

// AllToAll exchanges rows through host memory: each rank contributes its
// send rows with both count lists, and once all have arrived (and their
// counts agree: round.check) copies out the rows each rank addressed to
// it, in rank order, over the head of its recv buffer. On a backend whose
// memory the host addresses (kernels.HostFuncs: emu) the exchange is
// queued in its stream order, so a graph capture records it and the
// ranks meet at each replay; elsewhere (cpu) the rows travel by Download
// and Upload. BF16 rows travel as their f32 values, exact both ways.
func (m *member) AllToAll(send kernels.Buffer, sendRows []int, recv kernels.Buffer, recvRows []int, width int) error {
	if err := m.checkAllToAll(send, sendRows, recv, recvRows, width); err != nil {
		m.g.Abort(err)
		return errors.Join(err, kernels.ErrCollectiveAborted)
	}
	sendRows, recvRows = slices.Clone(sendRows), slices.Clone(recvRows)
	if hf, ok := m.b.(kernels.HostFuncs); ok && hf.HostMemory() {
		return hf.HostFunc([]kernels.Buffer{send, recv}, func(mem [][]byte) error {
			out := storedFloats(mem[1], recv.DType())
			if err := m.allToAll(storedFloats(mem[0], send.DType()), sendRows, out, recvRows, width, send.DType()); err != nil {
				return err
			}
			storeFloats(mem[1], out, recv.DType())
			return nil
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
	if err := m.allToAll(host, sendRows, out, recvRows, width, send.DType()); err != nil {
		return err
	}
	m.b.Upload(recv, out)
	return nil
}

// allToAll is the exchange over host memory: send is this rank's own
// copy of its rows (the peers read it after the call returns here), out
// receives the rows addressed to this rank over its head.
func (m *member) allToAll(send []float32, sendRows []int, out []float32, recvRows []int, width int, dt kernels.DType) error {
	r, err := m.g.exchange(m.rank, "all-to-all", width, part{values: send, sendRows: sendRows, recvRows: recvRows, dt: dt})
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

// checkAllToAll is what one rank can check of its own call: F32 or BF16
// buffers of one dtype and kernels.CheckAllToAll.
func (m *member) checkAllToAll(send kernels.Buffer, sendRows []int, recv kernels.Buffer, recvRows []int, width int) error {
	if err := kernels.CheckAllToAllDTypes(send.DType(), recv.DType()); err != nil {
		return fmt.Errorf("inproc: rank %d: %w", m.rank, err)
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

// storedFloats is a copy of a buffer's stored bytes (kernels.HostFuncs)
// as f32 values: an F32 buffer's as they are, a BF16 one's widened.
func storedFloats(mem []byte, dt kernels.DType) []float32 {
	if dt == kernels.BF16 {
		out := make([]float32, len(mem)/2)
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(mem[2*i:])) << 16)
		}
		return out
	}
	return slices.Clone(unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(mem))), len(mem)/4))
}

// storeFloats writes v over a buffer's stored bytes: as they are into an
// F32 buffer, rounded to nearest-even into a BF16 one (exact for the
// bf16 values an exchange of BF16 rows moves).
func storeFloats(mem []byte, v []float32, dt kernels.DType) {
	if dt == kernels.BF16 {
		for i, x := range v {
			binary.LittleEndian.PutUint16(mem[2*i:], bf16Bits(x))
		}
		return
	}
	copy(unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(mem))), len(mem)/4), v)
}

// bf16Bits is x rounded to the nearest bf16, ties to even (NaN stays a
// NaN): the upper half of its f32.
func bf16Bits(x float32) uint16 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}
