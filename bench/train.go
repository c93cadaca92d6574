package bench

import (
	"fmt"
	"math/rand/v2"

	"github.com/grpo-dev/grpo/estimate/perf"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// measureTrain returns the tokens/s of one LoRA train step: the training
// forward, log-probs of every next token, and the backward pass into the
// adapter's gradients (what PolicyGradient does per micro-batch).
func measureTrain(base *model.Model, o Options, counts *Counts, profiles *[]PhaseProfile) (float64, error) {
	cfg := lora.DefaultConfig()
	cfg.Rank, cfg.Alpha = o.LoRARank, float64(2*o.LoRARank)
	ad, err := lora.New(base, cfg, 1)
	if err != nil {
		return 0, err
	}
	defer ad.Free()
	m := base.WithAdapter(ad)
	perf.TagWeights(m, ad)
	m.Recompute, m.CheckpointLayers, _ = model.ParseRecomputeSetting(o.Recompute) // checked by Run
	rng := rand.New(rand.NewPCG(9, 9))
	// Micro-batches of whole sequences whose logits (tokens × vocab) stay
	// within the backends' int32 index space, as PolicyGradient's do.
	perMB := min(o.TrainSeqs, maxLogits/(o.TrainLen*m.Config.VocabSize))
	if perMB < 1 {
		return 0, fmt.Errorf("bench: one train sequence of %d tokens has %d logits, more than %d; lower --train-len", o.TrainLen, o.TrainLen*m.Config.VocabSize, maxLogits)
	}
	type micro struct {
		b       model.Batch
		targets []int32
	}
	var mbs []micro
	for s := 0; s < o.TrainSeqs; s += perMB {
		var mb micro
		for q := range min(perMB, o.TrainSeqs-s) {
			for i := range o.TrainLen {
				mb.b.Add(q, i, int32(rng.IntN(m.Config.VocabSize)))
				mb.targets = append(mb.targets, int32(rng.IntN(m.Config.VocabSize)))
			}
		}
		mbs = append(mbs, mb)
	}
	be := m.Backend
	dlogp := be.Alloc(kernels.F32, mbs[0].b.Len())
	defer be.Free(dlogp)
	ones := make([]float32, mbs[0].b.Len())
	for i := range ones {
		ones[i] = 1
	}
	be.Upload(dlogp, ones)
	runMicro := func(mb *micro) error {
		tr, err := m.ForwardTrain(&mb.b, nil, mb.targets)
		if err != nil {
			return err
		}
		g := dlogp
		if mb.b.Len() < dlogp.Len() {
			g = dlogp.Slice(0, mb.b.Len())
		}
		err = tr.Backward(g)
		tr.Free()
		return err
	}
	d, err := best(o.Repeat, func() error {
		var stepFLOPs int64
		for i := range mbs {
			c, err := perf.Measure(be, func() error { return runMicro(&mbs[i]) })
			if err != nil {
				return err
			}
			counts.TrainMicroBatch = c // the last micro-batch's
			if c != nil {
				stepFLOPs += c.FLOPs
			}
		}
		counts.TrainStepFLOPs = stepFLOPs
		return be.Sync()
	})
	if err != nil {
		return 0, err
	}
	if o.Profile {
		phase := fmt.Sprintf("train micro-batch %dx%d", min(perMB, o.TrainSeqs), o.TrainLen)
		if o.Recompute != "none" {
			phase += " recompute " + o.Recompute
		}
		err := addProfile(profiles, be, phase, "forward, log-probs and backward to the LoRA gradients", func() error {
			if err := runMicro(&mbs[0]); err != nil {
				return err
			}
			return be.Sync()
		})
		if err != nil {
			return 0, err
		}
	}
	return float64(o.TrainSeqs*o.TrainLen) / d.Seconds(), nil
}

// maxLogits is the most elements one logits buffer may have: the cuda
// backend's ops index with int32.
const maxLogits = 1<<31 - 1
