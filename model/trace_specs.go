package model

import "github.com/grpo-dev/grpo/kernels"

// The buffers of a forward (Forward, ForwardTrain) and a backward outside
// the layers: listed here so that the passes allocate them and the sizes
// (train_sizes.go, forward_sizes.go) sum the same lists.

// embedSpecs lists the embedded input of n tokens, which the first layer
// reads as its residual stream.
func (c *Config) embedSpecs(x *kernels.Buffer, n int) bufSpecs {
	var b bufSpecs
	b.f32(x, n*c.HiddenSize)
	return b
}

// inferenceLoRASpecs lists layer l's x·Aᵀ in an inference forward of n
// tokens: its blocks' loraSpecs, one per adapted projection of its
// attention and dense MLP, the layer's own (the DeltaNet's, the shared
// expert's, the experts' and the router's are the inference set's, one
// per projection at the largest rank, which the static decode step needs
// too).
func (c *Config) inferenceLoRASpecs(s *layerActs, l, n int, ad *AdapterShape) bufSpecs {
	d := c.decoderLayer(l)
	return append(d.mixer.loraSpecs(c, s, l, n, ad), d.channel.loraSpecs(c, s, l, n, ad)...)
}

// forwardHeadSpecs lists Forward's buffers after the layers for r logits
// rows: the final norm's output hF (and its bf16 cast hFb, with casts)
// and, when the rows are gathered (not every token in order), their
// indices.
func (c *Config) forwardHeadSpecs(hF, hFb, rows *kernels.Buffer, r int, gather, casts bool) bufSpecs {
	var b bufSpecs
	b.f32(hF, r*c.HiddenSize)
	if casts {
		b.add(hFb, kernels.BF16, r*c.HiddenSize)
	}
	if gather {
		b.i32(rows, r)
	}
	return b
}

// logitsSpecs lists the logits of r rows.
func (c *Config) logitsSpecs(logits *kernels.Buffer, r int) bufSpecs {
	var b bufSpecs
	b.f32(logits, r*c.VocabSize)
	return b
}

// traceInputSpecs lists what ForwardTrain allocates before the layers
// beside the batch's indices: the r targets, the scored rows' batch
// indices (scored: not every token, in order) and the embedded input of n
// tokens.
func (c *Config) traceInputSpecs(tr *Trace, x *kernels.Buffer, n, r int, scored bool) bufSpecs {
	var b bufSpecs
	b.i32(&tr.targets, r)
	if scored {
		b.i32(&tr.rows, r)
	}
	return append(b, c.embedSpecs(x, n)...)
}

// traceHeadSpecs lists what ForwardTrain allocates after the layers for
// r scored rows: the final norm's statistics and output hF (and its bf16
// cast hFb, with casts), its input gathered from the scored rows
// (gather: not every token, in order), the logits, and the log-probs and
// entropies of the targets.
func (c *Config) traceHeadSpecs(tr *Trace, hF, hFb *kernels.Buffer, r int, gather, casts bool) bufSpecs {
	h := c.HiddenSize
	var b bufSpecs
	b.f32(&tr.rstdF, r)
	b.f32(hF, r*h)
	if casts {
		b.add(hFb, kernels.BF16, r*h)
	}
	if gather {
		b.f32(&tr.xFinal, r*h)
	}
	b.f32(&tr.logits, r*c.VocabSize)
	b.f32(&tr.Logp, r)
	b.f32(&tr.Entropy, r)
	return b
}

// lmHeadGradSpecs lists the LM head's backward scratch of r scored rows:
// the logits' gradient and the final norm output's, freed before the
// layers' backward. With casts (a bf16 LM head on a backend whose GEMMs
// round their A to bf16) the logits' gradient is bf16: the log-softmax's
// backward writes what the head's backward GEMM reads, with no f32 copy
// and no cast pass between them — at a 151k vocabulary the largest
// activation of the backward.
func (c *Config) lmHeadGradSpecs(dlogits, dhF *kernels.Buffer, r int, casts bool) bufSpecs {
	var b bufSpecs
	if casts {
		b.add(dlogits, kernels.BF16, r*c.VocabSize)
	} else {
		b.f32(dlogits, r*c.VocabSize)
	}
	b.f32(dhF, r*c.HiddenSize)
	return b
}

// residualGradSpecs lists the gradient of the residual stream of n
// tokens, which the backward carries through every layer (zero when
// allocated: unscored rows start with no gradient), and in a trace in
// attn with bf16 layers (trace_acts.go) its bf16 copy dxb, which the norms'
// backwards write beside it for those layers' blocks to read.
func (c *Config) residualGradSpecs(dx, dxb *kernels.Buffer, n int, attn kernels.DType) bufSpecs {
	var b bufSpecs
	b.f32(dx, n*c.HiddenSize)
	if c.bf16Trace(attn) {
		b.add(dxb, kernels.BF16, n*c.HiddenSize)
	}
	return b
}

// loadBalanceGradSpecs lists the load-balancing loss's gradient with
// respect to each expert's router probability (Trace.AuxCoef), alive
// through the layers' backward.
func (c *Config) loadBalanceGradSpecs(dprobs *kernels.Buffer) bufSpecs {
	var b bufSpecs
	b.f32(dprobs, c.NumExperts)
	return b
}
