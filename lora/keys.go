package lora

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/model"
)

// Names. PEFT names a LoRA matrix "base_model.model." + the module's path
// in the HF model + ".lora_A.weight". The decoder layers live under
// model.Config.TensorPrefix(): "model.layers.N." for a causal LM, and
// "model.language_model.layers.N." for Qwen3.5's
// Qwen3_5ForConditionalGeneration (the vision tower is model.visual), which
// is also the path vLLM maps those keys from.

// layersPrefix is where the decoder layers' module names start.
func layersPrefix(c *model.Config) string { return c.TensorPrefix() + "layers." }

// tensorKey is a parsed adapter tensor name.
type tensorKey struct {
	layer  int
	expert int  // an expert's adapter in a mixture-of-experts layer; −1 for none
	router bool // a mixture-of-experts layer's router (mlp.gate); proj is unused
	// fused is set for a fused-experts adapter (PEFT's target_parameters on
	// mlp.experts): "outer" for …mlp.experts.lora_A, "inner" for
	// …mlp.experts.base_layer.lora_A (experts_fused.go).
	fused string
	proj  model.Proj
	which string // "A" or "B"
}

// parseKey reads the name of a LoRA matrix as PEFT and its relatives write
// it: "base_model.model." + prefix + "layers.N.self_attn.q_proj.lora_A.weight"
// (prefix from layersPrefix), also without "base_model.model." and with
// the adapter-name infix PEFT keeps in memory ("lora_A.default.weight");
// an expert's, "…layers.N.mlp.experts.E.gate_proj.lora_A.weight"; and the
// fused experts', "…layers.N.mlp.experts[.base_layer].lora_A.weight".
func parseKey(name, prefix string) (tensorKey, bool) {
	s := strings.TrimPrefix(name, "base_model.model.")
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return tensorKey{}, false
	}
	num, rest, ok := strings.Cut(rest, ".")
	layer, ok := index(num, ok)
	if !ok {
		return tensorKey{}, false
	}
	rest = fromMixer(rest)
	// matrix reads the tail after "lora_": "A.weight" or "B.default.weight".
	matrix := func(tail string) (string, bool) {
		if len(tail) < 2 || (tail[:1] != "A" && tail[:1] != "B") {
			return "", false
		}
		return tail[:1], tail[1:] == ".weight" || tail[1:] == ".default.weight"
	}
	if tail, ok := strings.CutPrefix(rest, "mlp."+model.RouterModule+".lora_"); ok {
		which, ok := matrix(tail)
		return tensorKey{layer: layer, expert: -1, router: true, which: which}, ok
	}
	for fused, path := range map[string]string{"outer": "mlp.experts.lora_", "inner": "mlp.experts.base_layer.lora_"} {
		if tail, ok := strings.CutPrefix(rest, path); ok {
			which, ok := matrix(tail)
			return tensorKey{layer: layer, expert: -1, fused: fused, which: which}, ok
		}
	}
	expert := -1
	if r, ok := strings.CutPrefix(rest, "mlp.experts."); ok {
		num, r, ok := strings.Cut(r, ".")
		if expert, ok = index(num, ok); !ok {
			return tensorKey{}, false
		}
		// An expert has the MLP's projections: "mlp.gate_proj" below.
		rest = "mlp." + r
	}
	// GLM-4.5's shared experts (mlp.shared_experts.) are the projections
	// Qwen3.5-MoE names mlp.shared_expert.; a model has one or the other.
	if r, ok := strings.CutPrefix(rest, "mlp.shared_experts."); ok {
		rest = "mlp.shared_expert." + r
	}
	for p := range model.NumProj {
		if expert >= 0 && !p.IsMLP() {
			continue
		}
		tail, ok := strings.CutPrefix(rest, p.Module()+".lora_")
		if !ok {
			continue
		}
		which, ok := matrix(tail)
		return tensorKey{layer: layer, expert: expert, proj: p, which: which}, ok
	}
	return tensorKey{}, false
}

// fromMixer reads a Nemotron-H module path, where every block of a
// layer is its mixer (mixer.q_proj, mixer.in_proj, mixer.up_proj,
// mixer.experts.E.up_proj, mixer.shared_experts.up_proj, mixer.gate), as
// the module paths the other families' names use, which parseKey matches
// (model.Proj's Module): attention's under self_attn., the MLP's, the
// experts', the shared experts' and the router under mlp., out_proj as
// the token mixer's (ProjOut), in_proj as it is (ProjMambaIn).
func fromMixer(rest string) string {
	r, ok := strings.CutPrefix(rest, "mixer.")
	if !ok {
		return rest
	}
	for _, p := range []string{"q_proj.", "k_proj.", "v_proj.", "o_proj."} {
		if strings.HasPrefix(r, p) {
			return "self_attn." + r
		}
	}
	switch {
	case strings.HasPrefix(r, "out_proj."):
		return model.ProjOut.Module() + r[len("out_proj"):]
	case strings.HasPrefix(r, "in_proj."):
		return rest
	}
	return "mlp." + r
}

// index parses a layer or expert number as PEFT writes it (no sign, no
// leading zeros).
func index(num string, ok bool) (int, bool) {
	n, err := strconv.Atoi(num)
	return n, ok && err == nil && n >= 0 && strconv.Itoa(n) == num
}

// moduleName is a projection's module path in the HF model, the name
// target_modules and the patterns are matched against.
func moduleName(c *model.Config, layer int, p model.Proj) string {
	return fmt.Sprintf("%s%d.%s", layersPrefix(c), layer, c.ProjModule(p))
}

// peftKey is the key PEFT's save_pretrained writes for a LoRA matrix
// (which is "A" or "B") of a decoder-layer projection.
func peftKey(c *model.Config, layer int, p model.Proj, which string) string {
	return matrixKey(moduleName(c, layer, p), which)
}

// matrixKey is the key of a module's lora_A or lora_B.
func matrixKey(module, which string) string {
	return fmt.Sprintf("base_model.model.%s.lora_%s.weight", module, which)
}
