package model

import "github.com/grpo-dev/grpo/kernels"

// noMixer and noChannel are the absent half of a layer that is one block
// behind one norm (Nemotron-H's: a Mamba-2 mixer, attention, an MoE or an
// MLP alone). They have no weights, activations, cache or adapter
// targets, so the passes' loops over the blocks need no check; the norms
// and residual adds, which a missing half changes, are the only places
// that ask (decoderLayer.single: layerForward, layerBackward, the norms'
// weight names).
type noMixer struct{}

func (noMixer) cacheKind() TokenMixer                                                   { return MixNone }
func (noMixer) loraTargets() []Proj                                                     { return nil }
func (noMixer) params(*Config) int64                                                    { return 0 }
func (noMixer) gemmWeight(*Layer) kernels.Buffer                                        { return nil }
func (noMixer) projWeight(*Layer, Proj) kernels.Buffer                                  { return nil }
func (noMixer) weightBuffers(*Layer) []*kernels.Buffer                                  { return nil }
func (noMixer) resliceWeights(*Config, *Layer)                                          {}
func (noMixer) finishInference(*layerActs)                                              {}
func (noMixer) dropKept(*layerActs, Recompute)                                          {}
func (noMixer) recompute(*Model, int, *KVCache, batchIndex, int, *layerActs, Recompute) {}
func (noMixer) weightSpecs(_ *Config, s []tensorSpec, _ *Layer, _ string) (out, tail []tensorSpec) {
	return s, nil
}
func (noMixer) inferenceSpecs(*Config, *layerActs, int, *AdapterShape) bufSpecs { return nil }
func (noMixer) loraSpecs(*Config, *layerActs, int, int, *AdapterShape) bufSpecs { return nil }
func (noMixer) trainingSpecs(*Config, *layerActs, int, int, *AdapterShape, Recompute, kernels.DType) bufSpecs {
	return nil
}
func (noMixer) droppedSpecs(*Config, *layerActs, int, Recompute) bufSpecs { return nil }
func (noMixer) gradSpecs(*Config, *layerGrads, int, int, int, int, *AdapterShape, bool) bufSpecs {
	return nil
}
func (noMixer) forward(*Model, *arena, int, *KVCache, batchIndex, int, *layerActs) {}
func (noMixer) backward(*Trace, int, *layerActs, *layerGrads, kernels.Buffer, bool) kernels.Buffer {
	return nil
}

type noChannel struct{}

// bf16Acts: no block, no buffers; the layer's other block decides.
func (noMixer) bf16Acts(*Config, *layerActs, *layerGrads) (bf16Acts, bool)   { return bf16Acts{}, true }
func (noChannel) bf16Acts(*Config, *layerActs, *layerGrads) (bf16Acts, bool) { return bf16Acts{}, true }

func (noChannel) sparse() bool                                                           { return false }
func (noChannel) loraTargets() []Proj                                                    { return nil }
func (noChannel) params(*Config) int64                                                   { return 0 }
func (noChannel) projWeight(*Layer, Proj) kernels.Buffer                                 { return nil }
func (noChannel) weightSpecs(_ *Config, s []tensorSpec, _ *Layer, _ string) []tensorSpec { return s }
func (noChannel) weightBuffers(*Layer) []*kernels.Buffer                                 { return nil }
func (noChannel) resliceWeights(*Config, *Layer)                                         {}
func (noChannel) normCast(*layerActs) kernels.Buffer                                     { return nil }
func (noChannel) finishInference(*Model, *layerActs, int)                                {}
func (noChannel) dropKept(*layerActs, Recompute)                                         {}
func (noChannel) keepCheckpointed(*Model, *layerActs, *layerActs)                        {}
func (noChannel) recompute(*Model, int, *layerActs, int, Recompute)                      {}
func (noChannel) forward(*Model, *arena, int, *layerActs, int)                           {}
func (noChannel) loraSpecs(*Config, *layerActs, int, int, *AdapterShape) bufSpecs        { return nil }
func (noChannel) inferenceSpecs(*Config, *layerActs, int, *AdapterShape) (acts, experts bufSpecs) {
	return nil, nil
}
func (noChannel) trainingSpecs(*Config, *layerActs, int, int, *AdapterShape, Recompute) bufSpecs {
	return nil
}
func (noChannel) droppedSpecs(*Config, *layerActs, int, Recompute) bufSpecs { return nil }
func (noChannel) traceActs(*Model, *arena, *arena, int, int, *layerActs, *AdapterShape, kernels.Buffer, *moeScratch, bool, Recompute) {
}
func (noChannel) traceBytes(*Config, int, int, *AdapterShape, bool, kernels.DType) channelTraceBytes {
	return channelTraceBytes{}
}
func (noChannel) rerunActs(*Model, *arena, int, int, *layerActs, *layerActs, *AdapterShape, *moeScratch) {
}
func (noChannel) gradSpecs(*Config, *layerGrads, int, int, *AdapterShape) bufSpecs { return nil }
func (noChannel) backward(*Trace, int, *layerActs, *layerGrads, kernels.Buffer) kernels.Buffer {
	return nil
}

// hasMixer and hasChannel report whether the layer has each half; a
// layer has at least one.
func (d decoderLayer) hasMixer() bool   { return d.mixer != noMixer{} }
func (d decoderLayer) hasChannel() bool { return d.channel != noChannel{} }
