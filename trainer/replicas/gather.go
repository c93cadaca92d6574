package replicas

import (
	"bytes"
	"encoding/gob"
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/rollout"
)

// allGather hands every rank of c every rank's data, in rank order,
// through the collective itself — so a job of several processes needs
// no second channel beside NCCL for what the host holds (trajectories,
// loss stats): the byte counts first (ExchangeCounts), then an all-to-all
// in which each rank sends its bytes to every rank, packed two to an F32
// value as whole numbers below 2^16 (exact in a float, never a NaN, moved
// bit for bit).
func allGather(c kernels.Collective, be kernels.Backend, data []byte) ([][]byte, error) {
	size := c.Size()
	n := (len(data) + 1) / 2
	counts := make([]int, 0, 2*size)
	for range size {
		counts = append(counts, n, len(data))
	}
	got, err := c.ExchangeCounts(counts)
	if err != nil {
		return nil, err
	}
	packed := make([]float32, n)
	for i := range n {
		v := uint16(data[2*i]) << 8
		if 2*i+1 < len(data) {
			v |= uint16(data[2*i+1])
		}
		packed[i] = float32(v)
	}
	sendRows, recvRows := make([]int, size), make([]int, size)
	total := 0
	for p := range size {
		sendRows[p], recvRows[p] = n, got[2*p]
		total += got[2*p]
	}
	send, recv := be.Alloc(kernels.F32, max(1, n*size)), be.Alloc(kernels.F32, max(1, total))
	defer be.Free(send)
	defer be.Free(recv)
	for p := range size {
		be.Upload(send.Slice(p*n, n), packed)
	}
	if n == 0 {
		be.Upload(send.Slice(0, 1), []float32{0})
	}
	if err := c.AllToAll(send, sendRows, recv, recvRows, 1); err != nil {
		return nil, err
	}
	all := make([]float32, max(1, total))
	be.Download(all, recv)
	if err := be.Sync(); err != nil {
		return nil, err
	}
	out := make([][]byte, size)
	at := 0
	for p := range size {
		rows, length := got[2*p], got[2*p+1]
		if length > 2*rows || length < 2*rows-1 {
			return nil, fmt.Errorf("rank %d sends %d bytes in %d values", p, length, rows)
		}
		b := make([]byte, 2*rows)
		for i := range rows {
			v := uint16(all[at+i])
			b[2*i], b[2*i+1] = byte(v>>8), byte(v)
		}
		out[p] = b[:length]
		at += rows
	}
	return out, nil
}

// gatherGob all-gathers v (gob-encoded) from every rank into one slice,
// rank order.
func gatherGob[T any](c kernels.Collective, be kernels.Backend, v T) ([]T, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	parts, err := allGather(c, be, buf.Bytes())
	if err != nil {
		return nil, err
	}
	out := make([]T, len(parts))
	for p, b := range parts {
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&out[p]); err != nil {
			return nil, fmt.Errorf("rank %d's data: %w", p, err)
		}
	}
	return out, nil
}

// gatherTrajectories is every device's run of trajectories, in device
// order, for a play across processes. The examples stay behind (every
// rank holds them; the caller puts them back) since their Info holds
// values gob cannot name; every rank, this one included, takes the
// decoded copies, so all hold the same.
func gatherTrajectories(c kernels.Collective, be kernels.Backend, ts []rollout.Trajectory) ([][]rollout.Trajectory, error) {
	bare := make([]rollout.Trajectory, len(ts))
	for i, t := range ts {
		t.Example = rollout.Trajectory{}.Example
		bare[i] = t
	}
	return gatherGob(c, be, bare)
}

// gatherLoss is every device's loss stats, in device order.
func gatherLoss(c kernels.Collective, be kernels.Backend, st loss.Stats) ([]loss.Stats, error) {
	return gatherGob(c, be, st)
}
