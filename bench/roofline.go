package bench

import (
	"fmt"

	"github.com/grpo-dev/grpo/estimate/perf"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// rooflineFigures turns Run's rates into fractions of the H200's peaks
// (estimate/perf): prefill and train as MFU (achieved FLOP/s over peak;
// bf16 weights run on tensor cores, f32 weights at most at the FP32 peak,
// so both are given), decode as the fraction of HBM bandwidth its bytes
// use: perf.DecodeBytesShared (without an adapter: the figure decodes the
// bare model) at the mean context of the timed steps, weights of
// weightElem bytes each and cached keys and values in kv (perf.KVDType).
// A figure whose rate is 0 (skipped) is left out. The counts are the
// standard model (perf.PrefillFLOPs, perf.TrainFLOPs).
func rooflineFigures(c *model.Config, weightElem int, kv kernels.DType, o Options, prefill, decode, train float64) []Figure {
	var out []Figure
	mfu := func(name string, tokPerSec, flopsPerToken float64) {
		f := tokPerSec * flopsPerToken
		out = append(out,
			Figure{name + " TFLOP/s", f / 1e12, "TFLOP/s"},
			Figure{name + " MFU of bf16 peak", 100 * f / perf.H200BF16FLOPs, "%"},
			Figure{name + " of fp32 peak", 100 * f / perf.H200FP32FLOPs, "%"})
	}
	if prefill > 0 {
		mfu(fmt.Sprintf("prefill %dx%d", o.Batch, o.Prefill), prefill, perf.PrefillFLOPs(c, o.Prefill, o.PrefillLogits == "all"))
	}
	if decode > 0 {
		ctx := float64(o.Prefill) + float64(o.Decode+1)/2
		stepsPerSec := decode / float64(o.Batch)
		b := perf.DecodeBytesShared(c, o.Batch, o.Group, ctx, o.Prefill, 0, kv)
		b.Weights *= float64(weightElem) / 2 // DecodeBytes' are bf16
		bytes := b.Total()
		out = append(out,
			Figure{fmt.Sprintf("decode batch %d HBM", o.Batch), stepsPerSec * bytes / 1e9, "GB/s"},
			Figure{fmt.Sprintf("decode batch %d of HBM peak", o.Batch), 100 * stepsPerSec * bytes / perf.H200HBMBytes, "%"})
	}
	if train > 0 {
		name := fmt.Sprintf("lora train %dx%d", o.TrainSeqs, o.TrainLen)
		mfu(name, train, perf.TrainFLOPs(c, o.TrainLen))
		// 4N strictly, N the weights GEMMs multiply (projections and LM
		// head; the embedding is a gather): forward plus input gradients,
		// attention left out — the figure the issue-18 bar is stated in.
		// And full fine-tuning's 6N (weight gradients too), for comparison
		// with figures quoted that way; LoRA does not do that work.
		linear := perf.LinearFLOPs(c)
		out = append(out,
			Figure{name + " TFLOP/s at 4N", train * 2 * linear / 1e12, "TFLOP/s"},
			Figure{name + " MFU of bf16 peak at 4N", 100 * train * 2 * linear / perf.H200BF16FLOPs, "%"},
			Figure{name + " MFU of bf16 peak at 6N", 100 * train * 3 * linear / perf.H200BF16FLOPs, "%"})
	}
	return out
}

// hfuFigures are the hardware FLOP utilisation of prefill and train: the
// FLOPs the device executed (Counts.FLOPs: every GEMM, LoRA product and
// attention kernel's matrix work, recompute and the attention backward's
// rebuilt scores included; elementwise kernels not counted) per second
// over the bf16 peak, and how many of them the model count (MFU's
// numerator) is: the ratio shows what recompute, LoRA and the backward's
// recomputed scores cost. prefillFLOPs is one whole timed prefill's count,
// trainFLOPs one whole train step's (all its micro-batches); a figure
// without a count or a rate is left out.
func hfuFigures(c *model.Config, o Options, prefillFLOPs, trainFLOPs int64, prefill, train float64) []Figure {
	var out []Figure
	hfu := func(name string, tokPerSec, countedPerToken, modelPerToken float64) {
		out = append(out,
			Figure{name + " HFU of bf16 peak", 100 * tokPerSec * countedPerToken / perf.H200BF16FLOPs, "%"},
			Figure{name + " counted/model FLOPs", countedPerToken / modelPerToken, "x"})
	}
	if prefill > 0 && prefillFLOPs > 0 {
		hfu(fmt.Sprintf("prefill %dx%d", o.Batch, o.Prefill), prefill, float64(prefillFLOPs)/float64(o.Batch*o.Prefill), perf.PrefillFLOPs(c, o.Prefill, o.PrefillLogits == "all"))
	}
	if train > 0 && trainFLOPs > 0 {
		hfu(fmt.Sprintf("lora train %dx%d", o.TrainSeqs, o.TrainLen), train, float64(trainFLOPs)/float64(o.TrainSeqs*o.TrainLen), perf.TrainFLOPs(c, o.TrainLen))
	}
	return out
}
