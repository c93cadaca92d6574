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
	if !c.Arch().Nested {
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
