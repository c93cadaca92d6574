package lora_test

import (
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// The model with an adapter attached, on the emulated device: these tests
// live here, not in model or kernels/emu, because tests follow the
// dependency arrows and only lora and what is above it may import lora.

// TestStaticTrainMicroBatch runs three train micro-batches of one shape
// (forward, log-probs, backward into a rank-16 LoRA on all projections)
// of the qwen3 tiny model under emu, under several recompute policies. After the first, a micro-batch's
// forward + backward + trace free makes no allocation, no free and no
// host sync: its buffers come back from the pool, freed in stream order,
// and nothing waits for the device until the caller reads the loss.
func TestStaticTrainMicroBatch(t *testing.T) {
	be := emu.New()
	defer be.Close()
	base, err := model.Load("../testdata/models/qwen3-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	ad, err := lora.New(base, lora.DefaultConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	const seqs, seqLen = 4, 16
	dlogp := be.Alloc(kernels.F32, seqs*(seqLen-4))
	be.Fill(dlogp, 0.5, dlogp.Len())
	for _, setting := range []string{"none", "selective", "swiglu+layer:1", "layer"} {
		m := base.WithAdapter(ad)
		var err error
		if m.Recompute, m.CheckpointLayers, err = model.ParseRecomputeSetting(setting); err != nil {
			t.Fatal(err)
		}
		t.Run(setting, func(t *testing.T) { staticMicroBatches(t, be, m, dlogp, seqs, seqLen) })
	}
}

// staticMicroBatches runs three micro-batches of one shape and checks the
// counts of the second and third.
func staticMicroBatches(t *testing.T, be *cuda.Backend, m *model.Model, dlogp kernels.Buffer, seqs, seqLen int) {
	rng := rand.New(rand.NewPCG(5, 6))
	for mb := range 3 {
		var b model.Batch
		var rows, targets []int32
		for s := range seqs {
			for i := range seqLen {
				b.Add(s, i, int32(rng.IntN(m.Config.VocabSize)))
				if i >= 4 { // the prompt's rows carry no loss
					rows, targets = append(rows, int32(s*seqLen+i)), append(targets, int32(rng.IntN(m.Config.VocabSize)))
				}
			}
		}
		before := be.Counts()
		tr, err := m.ForwardTrain(&b, rows, targets)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Backward(dlogp); err != nil {
			t.Fatal(err)
		}
		tr.Free()
		got := be.Counts().Sub(before)
		if mb > 0 && (got.Allocs != 0 || got.Frees != 0 || got.Syncs != 0) {
			t.Fatalf("micro-batch %d: %v; want 0 allocs, 0 frees, 0 syncs", mb, got)
		}
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStaticTrainMicroBatchMoE is TestStaticTrainMicroBatch on the
// Qwen3-MoE tiny model (every layer sparse): the sparse MLP's forward and
// backward are device work on fixed shapes too, so after the first
// micro-batch nothing is allocated, freed or waited for. Scoped to
// micro-batches without routing replay (Batch.Experts) and without the
// load-balancing loss (Trace.AuxCoef): those compute host metrics
// (Trace.RoutingMismatch, Trace.AuxLoss, the aux gradient) from values
// read back per micro-batch, so they sync by design.
func TestStaticTrainMicroBatchMoE(t *testing.T) {
	be := emu.New()
	defer be.Close()
	base, err := model.Load("../testdata/models/qwen3-moe-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	if base.Config.SparseLayers() == 0 {
		t.Fatal("qwen3-moe-tiny has no sparse layer")
	}
	ad, err := lora.New(base, lora.DefaultConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	const seqs, seqLen = 4, 16
	dlogp := be.Alloc(kernels.F32, seqs*(seqLen-4))
	be.Fill(dlogp, 0.5, dlogp.Len())
	for _, setting := range []string{"none", "layer"} {
		m := base.WithAdapter(ad)
		var err error
		if m.Recompute, m.CheckpointLayers, err = model.ParseRecomputeSetting(setting); err != nil {
			t.Fatal(err)
		}
		t.Run(setting, func(t *testing.T) { staticMicroBatches(t, be, m, dlogp, seqs, seqLen) })
	}
}
