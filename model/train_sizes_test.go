package model

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// byteLedger is the CPU backend with a count of live bytes and their
// peak.
type byteLedger struct {
	*cpu.Backend
	live, peak int64
}

func (l *byteLedger) Alloc(dt kernels.DType, n int) kernels.Buffer {
	l.live += int64(n) * int64(dt.Size())
	l.peak = max(l.peak, l.live)
	return l.Backend.Alloc(dt, n)
}

func (l *byteLedger) Free(b kernels.Buffer) {
	l.live -= int64(b.Len()) * int64(b.DType().Size())
	l.Backend.Free(b)
}

// TestTrainingSizesMatchAllocations: the sizes model reports for the
// estimate (train_sizes.go) are what ForwardTrain and Backward allocate,
// with every projection adapted (attention's, DeltaNet's, the shared
// expert's, the experts' and the routers'), under every recompute policy
// and with the last layer checkpointed: after the forward the trace holds
// TraceBytes, MoEScratchBytes and each layer's TrainingLayer.Kept, and the
// backward's peak above it is the residual gradient plus the larger of
// the LM head's scratch and one layer's BackwardBytes with its Rerun (and
// the load-balancing gradient beside the layers). The KV cache is a row
// per (sequence, position) of the batch's longest, more rows than tokens
// here, as BackwardBytes' cacheRows says.
func TestTrainingSizesMatchAllocations(t *testing.T) {
	for _, name := range []string{"qwen3-tiny", "qwen3_5-tiny", "qwen3-moe-tiny", "qwen3_5-moe-tiny", "glm4_moe-tiny", "gpt_oss-tiny"} {
		t.Run(name, func(t *testing.T) {
			be := &byteLedger{Backend: cpu.New()}
			m, err := Load(filepath.Join("..", "testdata", "models", name), be)
			if err != nil {
				t.Fatal(err)
			}
			c := m.Config
			const rank = 3
			var projs []Proj
			for p := range NumProj {
				projs = append(projs, p)
			}
			sparse := c.SparseLayers() > 0
			if sparse {
				m = m.WithAdapter(newMoETestAdapter(m, rank, 1))
			} else {
				m = m.WithAdapter(newTestAdapter(m, rank, 1))
			}
			ad := UniformAdapterShape(c, rank, projs, sparse)
			rng := rand.New(rand.NewPCG(3, 4))
			var b Batch
			var rows, targets []int32
			lens := []int{9, 6}
			for s, n := range lens {
				first := b.Len()
				b.Add(s, 0, randomIDs(rng, n, c.VocabSize)...)
				for i := first + n - 4; i < first+n; i++ { // the last four of each scored
					rows = append(rows, int32(i))
					targets = append(targets, randomIDs(rng, 1, c.VocabSize)...)
				}
			}
			n, r := b.Len(), len(rows)
			cacheRows := len(lens) * lens[0]
			settings := []struct {
				p Recompute
				k int
			}{{RecomputeNone, 0}, {RecomputeSwiGLU, 0}, {RecomputeSelective, 0}, {RecomputeLayer, 0}, {RecomputeSelective, 1}}
			for _, st := range settings {
				m.Recompute, m.CheckpointLayers = st.p, st.k
				tr, err := m.ForwardTrain(&b, rows, targets)
				if err != nil {
					t.Fatal(err)
				}
				var held int64
				for _, buf := range tr.a.bufs {
					held += int64(buf.Len()) * int64(buf.DType().Size())
				}
				tb := c.TraceBytes(n, r, len(lens), false, m.traceAttention())
				want := tb.Inputs + tb.Head + c.MoEScratchBytes(n, m.traceAttention())
				var layer int64
				for l, p := range m.layerRecompute() {
					lb := c.TrainingLayerBytes(l, n, ad, p, false, m.traceAttention())
					want += lb.Kept
					layer = max(layer, c.BackwardBytes(l, n, cacheRows, 0, ad, m.traceAttention())+lb.Rerun)
				}
				setting := RecomputeSetting(st.p, st.k)
				if held != want {
					t.Errorf("%s: the trace holds %d bytes, the sizes say %d (diff %d)", setting, held, want, want-held)
				}
				if sparse && !c.Arch().SigmoidRouter { // GLM-4.5 has no load-balancing loss
					tr.AuxCoef = 0.01
					layer += c.BackwardHeadBytes(n, r, false, m.traceAttention()).LoadBalance
				}
				dlogp := be.Alloc(kernels.F32, r)
				be.Fill(dlogp, 1, r)
				base := be.live
				be.peak = base
				if err := tr.Backward(dlogp); err != nil {
					t.Fatal(err)
				}
				bh := c.BackwardHeadBytes(n, r, false, m.traceAttention())
				if got, want := be.peak-base, bh.Residual+max(bh.LMHead, layer); got != want {
					t.Errorf("%s: the backward's peak is %d bytes above the trace, the sizes say %d (diff %d)", setting, got, want, want-got)
				}
				be.Free(dlogp)
				tr.Free()
			}
		})
	}
}

// TestDecodeBucketBytesMatchAllocations: the static decode step's
// workspace of n rows allocates what DecodeBucketBytes says, for a dense
// model, a hybrid and the MoEs, adapted on every projection, at bucket
// sizes 1, 4 and 8 — what the estimate holds a kept sampler's workspaces
// to.
func TestDecodeBucketBytesMatchAllocations(t *testing.T) {
	for _, name := range []string{"qwen3-tiny", "qwen3_5-tiny", "qwen3-moe-tiny", "qwen3_5-moe-tiny", "glm4_moe-tiny", "gpt_oss-tiny"} {
		t.Run(name, func(t *testing.T) {
			be := &byteLedger{Backend: cpu.New()}
			m, err := Load(filepath.Join("..", "testdata", "models", name), be)
			if err != nil {
				t.Fatal(err)
			}
			if m.Config.SparseLayers() > 0 {
				m = m.WithAdapter(newMoETestAdapter(m, 3, 1))
			} else {
				m = m.WithAdapter(newTestAdapter(m, 3, 1))
			}
			d := m.NewDecoder(8)
			defer d.Free()
			for _, n := range []int{1, 4, 8} {
				before := be.live
				b := d.newBucket(n)
				got := be.live - before
				want := m.Config.DecodeBucketBytes(n, m.adapterShape(), m.castsBF16())
				if got != want {
					t.Errorf("bucket of %d rows allocated %d bytes, DecodeBucketBytes says %d", n, got, want)
				}
				b.a.free()
			}
		})
	}
}
