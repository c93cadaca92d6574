package lora

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/model"
)

// tensorKey is a parsed adapter tensor name.
type tensorKey struct {
	layer  int
	expert int  // an expert's adapter in a mixture-of-experts layer; −1 for none
	router bool // a mixture-of-experts layer's router (mlp.gate); proj is unused
	proj   model.Proj
	which  string // "A" or "B"
}

// parseKey reads the name of a LoRA matrix as PEFT and its relatives write
// it: "base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight",
// also without the "base_model.model." prefix and with the adapter-name
// infix PEFT keeps in memory ("lora_A.default.weight"); and an expert's,
// "…layers.N.mlp.experts.E.gate_proj.lora_A.weight".
func parseKey(name string) (tensorKey, bool) {
	s := strings.TrimPrefix(name, "base_model.model.")
	rest, ok := strings.CutPrefix(s, "model.layers.")
	if !ok {
		return tensorKey{}, false
	}
	num, rest, ok := strings.Cut(rest, ".")
	layer, err := strconv.Atoi(num)
	if !ok || err != nil || layer < 0 || strconv.Itoa(layer) != num {
		return tensorKey{}, false
	}
	if tail, ok := strings.CutPrefix(rest, "mlp."+model.RouterModule+".lora_"); ok && len(tail) > 1 {
		which := tail[:1]
		if (which == "A" || which == "B") && (tail[1:] == ".weight" || tail[1:] == ".default.weight") {
			return tensorKey{layer: layer, expert: -1, router: true, which: which}, true
		}
		return tensorKey{}, false
	}
	expert := -1
	if r, ok := strings.CutPrefix(rest, "mlp.experts."); ok {
		num, r, ok := strings.Cut(r, ".")
		e, err := strconv.Atoi(num)
		if !ok || err != nil || e < 0 || strconv.Itoa(e) != num {
			return tensorKey{}, false
		}
		// An expert has the MLP's projections: "mlp.gate_proj" below.
		expert, rest = e, "mlp."+r
	}
	for p := range model.NumProj {
		if expert >= 0 && !p.IsMLP() {
			continue
		}
		tail, ok := strings.CutPrefix(rest, p.Module()+".lora_")
		if !ok || tail == "" {
			continue
		}
		which := tail[:1]
		switch tail[1:] {
		case ".weight", ".default.weight":
		default:
			return tensorKey{}, false
		}
		if which != "A" && which != "B" {
			return tensorKey{}, false
		}
		return tensorKey{layer: layer, expert: expert, proj: p, which: which}, true
	}
	return tensorKey{}, false
}

// moduleName is a projection's module path in the HF model, the name
// target_modules and the patterns are matched against.
func moduleName(layer int, p model.Proj) string {
	return fmt.Sprintf("model.layers.%d.%s", layer, p.Module())
}
