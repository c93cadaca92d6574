package model

import (
	"slices"
	"testing"
)

// TestDecoderLayersCompose checks the composition of every built-in
// shape: each layer's token mixer keeps the cache kind its layer_types
// entry names, its channel mixer is sparse where the MoE settings say,
// the layer's LoRA targets are its blocks' and no projection belongs to
// both of them, and every attention layer has the attention variants of
// its family.
func TestDecoderLayersCompose(t *testing.T) {
	for _, name := range ShapeNames() {
		c, _ := Shape(name)
		layers := c.decoderLayers()
		if len(layers) != c.NumLayers {
			t.Fatalf("%s: %d layers composed, want %d", name, len(layers), c.NumLayers)
		}
		for l, d := range layers {
			if got := d.mixer.cacheKind(); got != c.Mixer(l) {
				t.Errorf("%s layer %d: token mixer keeps a %v cache, want %v", name, l, got, c.Mixer(l))
			}
			if got := d.channel.sparse(); got != c.IsSparse(l) {
				t.Errorf("%s layer %d: channel mixer sparse %v, want %v", name, l, got, c.IsSparse(l))
			}
			for _, p := range d.mixer.loraTargets() {
				if slices.Contains(d.channel.loraTargets(), p) {
					t.Errorf("%s layer %d: %v is a target of both blocks", name, l, p)
				}
			}
			if a, ok := d.mixer.(attention); ok {
				arch := c.Arch()
				if a.qkNorm != arch.QKNorm || a.outputGate != arch.OutputGate || a.qkvBias != (arch.QKVBias || c.AttentionBias) {
					t.Errorf("%s layer %d: attention %+v does not match the family's variants", name, l, a)
				}
			}
		}
	}
}
