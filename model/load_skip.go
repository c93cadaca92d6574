package model

import (
	"fmt"
	"strings"
)

// skippedParts are the parts of a multimodal checkpoint grpo does not run:
// it trains the text model.
var skippedParts = []struct{ prefix, what string }{
	{"model.visual.", "vision tower"},
	{"mtp.", "multi-token-prediction"},
}

// skippedTensors describes, in one line, the tensors of names that belong
// to a part Load skips; "" when there are none. Other unused tensors are
// left unremarked, as before.
func skippedTensors(c *Config, names []string) string {
	if c.Arch().SigmoidRouter && !c.Arch().Nemotron {
		return skippedNextN(c, names)
	}
	if !c.Arch().Nested && !c.Arch().Nemotron { // Nemotron-H may store MTP layers under mtp.
		return ""
	}
	var parts []string
	for _, p := range skippedParts {
		n := 0
		for _, name := range names {
			if strings.HasPrefix(name, p.prefix) {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s tensors (%s*)", n, p.what, p.prefix))
		}
	}
	if parts == nil {
		return ""
	}
	return "skipped " + strings.Join(parts, " and ") + ": grpo runs the text model only"
}

// skippedNextN describes GLM-4.5's multi-token-prediction layers, which
// its checkpoints store as model.layers.N.* for N ≥ num_hidden_layers
// (num_nextn_predict_layers of them) and transformers ignores too.
func skippedNextN(c *Config, names []string) string {
	n, layers := 0, map[int]bool{}
	for _, name := range names {
		var l int
		rest, ok := strings.CutPrefix(name, "model.layers.")
		if !ok {
			continue
		}
		if _, err := fmt.Sscanf(rest, "%d.", &l); err == nil && l >= c.NumLayers {
			n++
			layers[l] = true
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("skipped %d multi-token-prediction tensors (%d layers from model.layers.%d.*): grpo runs the language model only", n, len(layers), c.NumLayers)
}
