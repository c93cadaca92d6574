package kerneltest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
)

// TestRefAttentionVariantMatchesTorch holds the variant references to
// testdata/golden/attention_variant.json, PyTorch's float64 autograd of
// transformers' gpt-oss eager attention (sink column, sliding-window mask;
// testdata/reference/attention_variant.py): out, lse and the gradients of
// Σ r·out, for windows 0, 1, 3 and 7 with and without sinks, within 1e-12.
func TestRefAttentionVariantMatchesTorch(t *testing.T) {
	data, err := os.ReadFile("../../testdata/golden/attention_variant.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Tokens, Heads int
		KVHeads       int `json:"kv_heads"`
		HeadDim       int `json:"head_dim"`
		Scale         float64
		Q, K, V, R    []float64
		SinkLogits    []float64 `json:"sink_logits"`
		Cases         []struct {
			Window               int
			Sinks                bool
			Out, Lse, Dq, Dk, Dv []float64
		}
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) != 8 || g.KVHeads == 0 || g.HeadDim == 0 || len(g.SinkLogits) != g.Heads {
		t.Fatalf("golden: %d cases, kv_heads %d, head_dim %d, %d sinks", len(g.Cases), g.KVHeads, g.HeadDim, len(g.SinkLogits))
	}
	n := g.Tokens
	seq, pos := make([]int32, n), make([]int32, n)
	for i := range pos {
		pos[i] = int32(i)
	}
	pg := IdentityPages(1, n)
	for _, c := range g.Cases {
		rv := RefVariant{Window: c.Window}
		if c.Sinks {
			rv.Sinks = g.SinkLogits
		}
		name := fmt.Sprintf("window=%d,sinks=%v", c.Window, c.Sinks)
		out, lse := RefAttentionVariant(g.Q, g.K, g.V, seq, pos, pg, n, g.Heads, g.KVHeads, g.HeadDim, g.Scale, rv)
		dq, dk, dv := RefAttentionBackwardVariant(g.R, g.Q, g.K, g.V, seq, pos, pg, n, g.Heads, g.KVHeads, g.HeadDim, g.Scale, rv)
		for _, x := range []struct {
			what      string
			got, want []float64
		}{{"out", out, c.Out}, {"lse", lse, c.Lse}, {"dq", dq, c.Dq}, {"dk", dk, c.Dk}, {"dv", dv, c.Dv}} {
			if len(x.got) != len(x.want) {
				t.Fatalf("%s %s: %d values, golden %d", name, x.what, len(x.got), len(x.want))
			}
			for i := range x.got {
				if math.Abs(x.got[i]-x.want[i]) > 1e-12*(1+math.Abs(x.want[i])) {
					t.Errorf("%s %s[%d] = %.15g, torch %.15g", name, x.what, i, x.got[i], x.want[i])
					break
				}
			}
		}
	}
}
