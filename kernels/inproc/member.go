package inproc

import (
	"errors"
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// member is one rank's kernels.Collective: its buffers move between its
// backend and the group through host memory (Download waits for the work
// queued before it, so the call is in stream order).
type member struct {
	g    *Group
	rank int
	b    kernels.Backend
}

func (m *member) Rank() int { return m.rank }
func (m *member) Size() int { return m.g.size }

func (m *member) AllReduceSum(buf kernels.Buffer) error {
	if buf.DType() != kernels.F32 {
		err := fmt.Errorf("inproc: rank %d: all-reduce of a %v buffer: want F32", m.rank, buf.DType())
		m.g.Abort(err)
		return errors.Join(err, kernels.ErrCollectiveAborted)
	}
	host := make([]float32, buf.Len())
	m.b.Download(host, buf)
	if err := m.b.Sync(); err != nil {
		m.g.Abort(fmt.Errorf("inproc: rank %d: its backend failed before the all-reduce: %w", m.rank, err))
		return fmt.Errorf("inproc: rank %d: %w", m.rank, err)
	}
	r, err := m.g.exchange(m.rank, "all-reduce", len(host), part{values: host})
	if err != nil {
		return err
	}
	m.b.Upload(buf, r.result)
	return nil
}

func (m *member) Barrier() error {
	_, err := m.g.exchange(m.rank, "barrier", 0, part{})
	return err
}

func (m *member) Abort(reason error) {
	m.g.Abort(fmt.Errorf("rank %d aborted: %w", m.rank, reason))
}

func (m *member) Close() error { return nil }
