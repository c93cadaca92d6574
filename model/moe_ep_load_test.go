package model

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/inproc"
)

// TestLoadExpertsIsShardExperts: loading a rank's experts reads the same
// values as loading every expert and keeping the rank's, bit for bit, for
// each checkpoint layout of experts: a tensor per expert (Qwen3-MoE,
// GLM-4.5), one stacking them all (GLM-4.5 fused, Qwen3.5-MoE), relu²
// experts (Nemotron-H, also latent wide); and the rank holds its share
// alone. gpt-oss's experts stack every expert in one Parameter (f32 or
// bf16) or in MXFP4 blocks and scales (dequantized on cpu), with biases
// stacked alike: the rank's run of each is read, biases too.
func TestLoadExpertsIsShardExperts(t *testing.T) {
	for _, name := range []string{"qwen3-moe-tiny", "glm4_moe-tiny", "glm4_moe-tiny-fused", "qwen3_5-moe-tiny", "nemotron_h-tiny", "nemotron_h-latent-tiny",
		"gpt_oss-tiny", "gpt_oss-tiny-bf16", "gpt_oss-tiny-mxfp4"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "models", name)
			const ranks = 2
			g, _ := inproc.NewGroup(ranks, time.Minute)
			gs, _ := inproc.NewGroup(ranks, time.Minute)
			for r := range ranks {
				be := cpu.New()
				coll, _ := g.Join(r, be)
				loaded, err := LoadExperts(dir, be, coll)
				if err != nil {
					t.Fatal(err)
				}
				whole, err := Load(dir, be)
				if err != nil {
					t.Fatal(err)
				}
				collS, _ := gs.Join(r, be)
				if err := whole.ShardExperts(collS); err != nil {
					t.Fatal(err)
				}
				c := loaded.Config
				if first, n := loaded.LocalExperts(); first != r*c.NumExperts/ranks || n != c.NumExperts/ranks {
					t.Fatalf("rank %d holds experts [%d, %d)", r, first, first+n)
				}
				for l := range c.NumLayers {
					if !c.IsSparse(l) {
						continue
					}
					a, b := loaded.W.Layers[l].MoE, whole.W.Layers[l].MoE
					if len(a.Experts) != c.NumExperts/ranks {
						t.Fatalf("layer %d: %d experts' views, want %d", l, len(a.Experts), c.NumExperts/ranks)
					}
					for i, pair := range [][2]kernels.Buffer{{a.GateUp, b.GateUp}, {a.Down, b.Down}, {a.Experts[1].Up, b.Experts[1].Up}} {
						got, want := bits(be, pair[0]), bits(be, pair[1])
						if n := heldLen(c, i, ranks); len(want) != n || !slices.Equal(got, want) {
							t.Errorf("rank %d layer %d tensor %d: %d values loaded, %d kept of the whole's (want %d), or they differ", r, l, i, len(got), len(want), n)
						}
					}
					for i, pair := range [][2]kernels.Buffer{{a.GateUpBias, b.GateUpBias}, {a.DownBias, b.DownBias}} {
						if (pair[0] == nil) != (pair[1] == nil) || pair[0] != nil && !slices.Equal(bits(be, pair[0]), bits(be, pair[1])) {
							t.Errorf("rank %d layer %d bias %d: loaded and kept differ", r, l, i)
						}
					}
				}
			}
		})
	}
}

func bits(be kernels.Backend, b kernels.Buffer) []float32 {
	v := make([]float32, b.Len())
	be.Download(v, b)
	return v
}

// heldLen is the values a rank of ranks holds of GateUp (i 0), Down (1),
// or one expert's up projection (2).
func heldLen(c *Config, i, ranks int) int {
	h, mi, per := c.ExpertWidth(), c.MoEIntermediateSize, c.NumExperts/ranks
	gateUp := 2 * mi * h
	if c.relu2Experts() {
		gateUp = mi * h
	}
	return [...]int{per * gateUp, per * h * mi, mi * h}[i]
}
