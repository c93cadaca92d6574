package main

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/model"
)

// Peaks of an H200 SXM (NVIDIA's datasheet): dense BF16 tensor-core
// throughput (what a bf16 checkpoint's GEMMs run at: cublasGemmEx with bf16
// operands), plain FP32 (CUDA cores: what cuBLAS Sgemm without TF32 runs on,
// the ceiling of an f32 model such as a random-init --shape), and HBM3e
// bandwidth. The bench reports its figures against these so a GPU number
// reads as a fraction of what the hardware can do, not as a bare rate.
const (
	h200BF16FLOPs = 989e12
	h200FP32FLOPs = 67e12
	h200HBMBytes  = 4.8e12
)

// linearFLOPs is the multiply-add work per token of every projection and
// the LM head (2 FLOPs per weight); the embedding is a gather and costs
// none. A mixture-of-experts layer counts its router and the
// num_experts_per_tok experts a token runs through: the active
// parameters, not the stored ones.
func linearFLOPs(c *model.Config) float64 {
	h, i, hd := float64(c.HiddenSize), float64(c.IntermediateSize), float64(c.HeadDim)
	q, kv := float64(c.NumHeads)*hd, float64(c.NumKVHeads)*hd
	var layers float64
	for l := range c.NumLayers {
		layers += h*q + 2*h*kv + q*h
		if c.IsSparse(l) {
			layers += float64(c.NumExperts)*h + float64(c.NumExpertsPerTok)*3*h*float64(c.MoEIntermediateSize)
		} else {
			layers += 3 * h * i
		}
	}
	return 2 * (layers + float64(c.VocabSize)*h)
}

// readParams is how many weights one decode step of batch sequences
// reads: every dense weight, and in each sparse layer the experts any of
// the batch's tokens is routed to — E·(1 − (1 − k/E)^batch) of E on
// average under uniform routing (all of them once batch·k ≫ E), each of
// 3·hidden·moe_intermediate weights.
func readParams(c *model.Config, batch int) float64 {
	n := float64(c.ParamCount())
	if s := c.SparseLayers(); s > 0 {
		e, k := float64(c.NumExperts), float64(c.NumExpertsPerTok)
		per := 3 * float64(c.HiddenSize) * float64(c.MoEIntermediateSize)
		read := e * (1 - math.Pow(1-k/e, float64(batch)))
		n -= float64(s) * (e - read) * per
	}
	return n
}

// attentionFLOPs is the work per token of attention over ctx cached
// positions: QKᵀ and P·V, 2·headDim FLOPs each per head and position.
func attentionFLOPs(c *model.Config, ctx float64) float64 {
	return 4 * float64(c.NumLayers*c.NumHeads*c.HeadDim) * ctx
}

// kvBytes is the KV cache (elemBytes per element: kvElemBytes) that one
// decode step of one sequence reads at context length ctx.
func kvBytes(c *model.Config, ctx float64, elemBytes int) float64 {
	return float64(kvPositionBytes(c, elemBytes)) * ctx
}

// rooflineFigures turns bench's rates into fractions of the H200's peaks:
// prefill and train as MFU (achieved FLOP/s over peak; bf16 weights run
// on tensor cores, f32 weights at most at the FP32 peak, so both are given), decode as the
// fraction of HBM bandwidth its bytes use: decodeBytes (the perf model's,
// without an adapter: the figure decodes the bare model) at the mean
// context of the timed steps, weights of weightElem bytes each and cached
// keys and values of kvElem (kvElemBytes). A figure whose rate is 0 (skipped) is left out. The counts
// are the standard model: train = forward + the backward's input
// gradients (the base is frozen: no weight gradients, so 2× the linear
// work) + attention backward at 2× its forward; the rank-r LoRA products
// add 2·r·(in+out) per projection, under 1% at rank 16, and are left out.
func rooflineFigures(c *model.Config, weightElem, kvElem int, o benchOpts, prefill, decode, train float64) []benchResult {
	var out []benchResult
	mfu := func(name string, tokPerSec, flopsPerToken float64) {
		f := tokPerSec * flopsPerToken
		out = append(out,
			benchResult{name + " TFLOP/s", f / 1e12, "TFLOP/s"},
			benchResult{name + " MFU of bf16 peak", 100 * f / h200BF16FLOPs, "%"},
			benchResult{name + " of fp32 peak", 100 * f / h200FP32FLOPs, "%"})
	}
	if prefill > 0 {
		mfu(fmt.Sprintf("prefill %dx%d", o.batch, o.prefill), prefill, prefillModelFLOPs(c, o))
	}
	if decode > 0 {
		ctx := float64(o.prefill) + float64(o.decode+1)/2
		stepsPerSec := decode / float64(o.batch)
		b := decodeBytesShared(c, o.batch, o.group, ctx, o.prefill, 0, kvElem)
		b.Weights *= float64(weightElem) / 2 // decodeBytes' are bf16
		bytes := b.Total()
		out = append(out,
			benchResult{fmt.Sprintf("decode batch %d HBM", o.batch), stepsPerSec * bytes / 1e9, "GB/s"},
			benchResult{fmt.Sprintf("decode batch %d of HBM peak", o.batch), 100 * stepsPerSec * bytes / h200HBMBytes, "%"})
	}
	if train > 0 {
		name := fmt.Sprintf("lora train %dx%d", o.trainSeqs, o.trainLen)
		mfu(name, train, trainModelFLOPs(c, o))
		// 4N strictly, N the weights GEMMs multiply (projections and LM
		// head; the embedding is a gather): forward plus input gradients,
		// attention left out — the figure the issue-18 bar is stated in.
		// And full fine-tuning's 6N (weight gradients too), for comparison
		// with figures quoted that way; LoRA does not do that work.
		out = append(out,
			benchResult{name + " TFLOP/s at 4N", train * 2 * linearFLOPs(c) / 1e12, "TFLOP/s"},
			benchResult{name + " MFU of bf16 peak at 4N", 100 * train * 2 * linearFLOPs(c) / h200BF16FLOPs, "%"},
			benchResult{name + " MFU of bf16 peak at 6N", 100 * train * 3 * linearFLOPs(c) / h200BF16FLOPs, "%"})
	}
	return out
}

// prefillModelFLOPs is the model count per prompt token of a prefill:
// causal, token t attends to t+1 positions, (n+1)/2 on average; the LM
// head runs for each sequence's last token only (unless every logit is
// asked for).
func prefillModelFLOPs(c *model.Config, o benchOpts) float64 {
	lmHead := 2 * float64(c.VocabSize) * float64(c.HiddenSize) * (1 - 1/float64(o.prefill))
	if o.prefillLogits == "all" {
		lmHead = 0
	}
	return linearFLOPs(c) - lmHead + attentionFLOPs(c, float64(o.prefill+1)/2)
}

// trainModelFLOPs is the model count per trained token: forward and input
// gradients of every weight (2× linear), attention forward and a backward
// of twice its work.
func trainModelFLOPs(c *model.Config, o benchOpts) float64 {
	return 2*linearFLOPs(c) + 3*attentionFLOPs(c, float64(o.trainLen+1)/2)
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
func hfuFigures(c *model.Config, o benchOpts, prefillFLOPs, trainFLOPs int64, prefill, train float64) []benchResult {
	var out []benchResult
	hfu := func(name string, tokPerSec, countedPerToken, modelPerToken float64) {
		out = append(out,
			benchResult{name + " HFU of bf16 peak", 100 * tokPerSec * countedPerToken / h200BF16FLOPs, "%"},
			benchResult{name + " counted/model FLOPs", countedPerToken / modelPerToken, "x"})
	}
	if prefill > 0 && prefillFLOPs > 0 {
		hfu(fmt.Sprintf("prefill %dx%d", o.batch, o.prefill), prefill, float64(prefillFLOPs)/float64(o.batch*o.prefill), prefillModelFLOPs(c, o))
	}
	if train > 0 && trainFLOPs > 0 {
		hfu(fmt.Sprintf("lora train %dx%d", o.trainSeqs, o.trainLen), train, float64(trainFLOPs)/float64(o.trainSeqs*o.trainLen), trainModelFLOPs(c, o))
	}
	return out
}
