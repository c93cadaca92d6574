package model

import (
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// TestScoredRowsMatchEveryRow: scoring a subset of rows (out of order) gives
// the log-probs of those rows of the every-row forward, and backward from
// them gives the LoRA gradients that the every-row backward gives when the
// other rows' dlogp is 0 — the dead rows' head only ever added zeros.
func TestScoredRowsMatchEveryRow(t *testing.T) {
	for _, arch := range []string{"qwen3", "llama"} {
		t.Run(arch, func(t *testing.T) {
			be := cpu.New()
			m := NewRandom(tinyConfig(arch), be, 21)
			ad := newTestAdapter(m, 2, 7)
			m = m.WithAdapter(ad)
			rng := rand.New(rand.NewPCG(3, 4))
			b, targets := packedTrainBatch(rng, m.Config.VocabSize)
			rows := []int32{14, 3, 8, 9, 12, 5}
			c := make([]float32, b.Len())
			sub, subTargets := make([]float32, len(rows)), make([]int32, len(rows))
			for i, r := range rows {
				sub[i] = float32(rng.NormFloat64())
				c[r], subTargets[i] = sub[i], targets[r]
			}
			full := trainGrads(t, m, ad, b, nil, targets, c)
			part := trainGrads(t, m, ad, b, rows, subTargets, sub)
			for i, r := range rows {
				if d := full.logp[r] - part.logp[i]; d > 1e-6 || d < -1e-6 {
					t.Errorf("row %d: log-prob %g scored alone, %g among every row", r, part.logp[i], full.logp[r])
				}
			}
			for k := range full.grads {
				if d := maxAbsDiff(full.grads[k], part.grads[k]); d > 1e-6*(1+maxAbs(full.grads[k])) {
					t.Errorf("gradient %d: max |Δ| %g between scored rows and every row", k, d)
				}
			}
		})
	}
}

type traced struct {
	logp  []float32
	grads [][]float32 // DA and DB of every adapted projection, in order
}

// trainGrads runs forward and backward from zeroed gradient buffers and
// returns the log-probs and every LoRA gradient.
func trainGrads(t *testing.T, m *Model, ad *testAdapter, b *Batch, rows, targets []int32, dlogp []float32) traced {
	t.Helper()
	be := m.Backend
	for l := range ad.l {
		for p := range NumProj {
			if ad.l[l][p] == nil {
				continue
			}
			be.Fill(ad.l[l][p].DA, 0, ad.l[l][p].DA.Len())
			be.Fill(ad.l[l][p].DB, 0, ad.l[l][p].DB.Len())
		}
	}
	tr, err := m.ForwardTrain(b, rows, targets)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	d := be.Alloc(kernels.F32, len(dlogp))
	defer be.Free(d)
	be.Upload(d, dlogp)
	if err := tr.Backward(d); err != nil {
		t.Fatal(err)
	}
	out := traced{logp: make([]float32, tr.Rows())}
	be.Download(out.logp, tr.Logp)
	for l := range ad.l {
		for p := range NumProj {
			if ad.l[l][p] == nil {
				continue
			}
			for _, g := range []kernels.Buffer{ad.l[l][p].DA, ad.l[l][p].DB} {
				v := make([]float32, g.Len())
				be.Download(v, g)
				out.grads = append(out.grads, v)
			}
		}
	}
	return out
}

func maxAbs(v []float32) float64 {
	var m float64
	for _, x := range v {
		m = max(m, float64(max(x, -x)))
	}
	return m
}

// TestForwardTrainRejectsBadRows: a repeated or out-of-batch scored row,
// or targets that do not match the rows, is an error, not a wrong result.
func TestForwardTrainRejectsBadRows(t *testing.T) {
	m := NewRandom(tinyConfig("qwen3"), cpu.New(), 1)
	b, targets := packedTrainBatch(rand.New(rand.NewPCG(1, 2)), m.Config.VocabSize)
	for _, c := range []struct {
		rows, targets []int32
	}{
		{[]int32{1, 1}, targets[:2]},
		{[]int32{0, int32(b.Len())}, targets[:2]},
		{[]int32{0, 2}, targets[:3]},
		{[]int32{}, nil},
	} {
		if tr, err := m.ForwardTrain(b, c.rows, c.targets); err == nil {
			tr.Free()
			t.Errorf("rows %v with %d targets: no error", c.rows, len(c.targets))
		}
	}
}
