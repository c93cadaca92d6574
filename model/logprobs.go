package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// TokenLogprobs returns, for each t in [start, len(ids)), the log-probability
// of ids[t] given ids[:t]: one sequence scored with a single prefill.
func (m *Model) TokenLogprobs(ids []int32, start int) ([]float32, error) {
	if start < 1 || start >= len(ids) {
		return nil, fmt.Errorf("start %d must be in [1, %d): token 0 has no context and at least one token must be scored", start, len(ids))
	}
	cache := m.NewKVCache(1, len(ids)-1)
	defer cache.Free()
	var b Batch
	b.Add(0, 0, ids[:len(ids)-1]...)
	rows := make([]int32, len(ids)-start)
	for i := range rows {
		rows[i] = int32(start - 1 + i)
	}
	logits, err := m.Forward(cache, &b, rows)
	if err != nil {
		return nil, err
	}
	be := m.Backend
	defer be.Free(logits)
	targets := be.Alloc(kernels.I32, len(rows))
	defer be.Free(targets)
	be.UploadI32(targets, ids[start:])
	lp := be.Alloc(kernels.F32, len(rows))
	defer be.Free(lp)
	be.LogSoftmaxGather(lp, nil, logits, targets, len(rows), m.Config.VocabSize)
	out := make([]float32, len(rows))
	be.Download(out, lp)
	return out, be.Sync()
}
