package lora

import (
	"fmt"
	"slices"

	"github.com/grpo-dev/grpo/model"
)

// AllLinear is PEFT's shorthand target_modules="all-linear": every
// nn.Linear of the model but the output head (PEFT's
// _maybe_include_all_linear_layers). In a config it stands alone,
// target_modules = ["all-linear"].
const AllLinear = "all-linear"

func (c Config) allLinear() bool {
	return len(c.TargetModules) == 1 && c.TargetModules[0] == AllLinear
}

// resolve maps TargetModules to what an adapter on a model of shape mc
// adapts: its projections in Proj order (each only in the layers that
// have it, model.Config.HasProj), the order of Params whatever the order
// of the names, and whether the routers are adapted.
func (c Config) resolve(mc *model.Config) (projs []model.Proj, routers bool, err error) {
	if projs, err = c.projs(); err != nil {
		return nil, false, err
	}
	slices.Sort(projs)
	if c.allLinear() {
		projs, routers = allLinearTargets(mc)
	} else {
		routers = c.routers()
	}
	if routers && fusedExperts(mc) {
		return nil, false, fmt.Errorf("lora.target_modules lists %q, the routers, but a %s model's router is not a linear module in Hugging Face transformers (PEFT cannot adapt it, and its files would not load); remove it", model.RouterModule, mc.ModelType)
	}
	return projs, routers, nil
}

// allLinearTargets is what PEFT's "all-linear" adapts on the HF model
// whose module tree grpo's adapters name (the tree of its keys, see
// keys.go): every projection the model has, since each is an nn.Linear —
// attention, the gated DeltaNet's in_proj_qkv/z/b/a and out_proj, the
// MLP, the shared expert and its one-output shared_expert_gate (a Linear
// all the same). Not adapted:
//   - Qwen3.5-MoE's routed experts and router: transformers holds the
//     experts as two 3-D Parameters (mlp.experts.gate_up_proj, down_proj)
//     and the router as Qwen3_5MoeTopKRouter, neither an nn.Linear; PEFT
//     reaches the experts only through target_parameters, which
//     "all-linear" does not set (every layer of the model is sparse, so no
//     dense MLP is lost with them);
//   - nothing else of a text model: lm_head is excluded by PEFT, conv1d is
//     an nn.Conv1d, norms and A_log/dt_bias are Parameters.
//
// Qwen3-MoE adapters are named as transformers-v4 modules (each expert an
// nn.Linear mlp.experts.E.gate_proj, the router the nn.Linear mlp.gate;
// vLLM loads that layout), where "all-linear" takes every expert and the
// routers too.
//
// GLM-4.5 holds its experts as fused Parameters too (Glm4MoeNaiveMoe), but
// its first first_k_dense_replace layers have a dense MLP of nn.Linears,
// which "all-linear" adapts: there the MLP's projections stay, and
// Config.AdaptsExperts keeps them off the sparse layers' experts.
func allLinearTargets(mc *model.Config) (projs []model.Proj, routers bool) {
	for p := range model.NumProj {
		if !mc.HasProjAnywhere(p) {
			continue
		}
		if p.IsMLP() && paramExperts(mc) && mc.SparseLayers() == mc.NumLayers {
			continue
		}
		projs = append(projs, p)
	}
	return projs, mc.SparseLayers() > 0 && !paramExperts(mc)
}

// paramExperts reports whether transformers holds the architecture's
// routed experts as Parameters, not nn.Linears, which "all-linear" leaves
// alone: the fused ones (fusedExperts) and Nemotron-H's. transformers'
// NemotronHExperts holds 3-D up_proj [E, inter, hidden] and down_proj
// [E, hidden, inter] Parameters (PEFT reaches them only through
// target_parameters) and its router NemotronHTopkRouter a bare weight
// Parameter; so all-linear on NemotronHForCausalLM adapts the Mamba
// mixers' in_proj/out_proj, attention's q/k/v/o_proj, the dense MLPs'
// and the shared experts' up/down_proj. The published checkpoints and
// vLLM (FusedMoE's per-expert mapping) name the experts one module each,
// mixer.experts.E.up_proj, and grpo saves an adapter on them (the MLP
// targets named explicitly) in that per-expert form.
func paramExperts(mc *model.Config) bool { return fusedExperts(mc) || mc.Arch().Nemotron }

// fusedExperts reports whether the architecture's routed experts are, in
// Hugging Face transformers, fused 3-D Parameters rather than one
// nn.Linear per expert: Qwen3.5-MoE (Qwen3_5MoeExperts). PEFT adapts them
// with target_parameters, and vLLM's Qwen3_5MoeForConditionalGeneration
// sets is_3d_moe_weight, loading expert adapters only in that fused form
// (experts_fused.go); GLM-4.5 (Glm4MoeNaiveMoe) likewise. Qwen3-MoE
// keeps grpo's per-expert layout. gpt-oss (GptOssExperts) holds its
// experts as Parameters used as x·W, [E, in, out] with gate and up
// interleaved (experts_fused.go's paramRow).
func fusedExperts(mc *model.Config) bool {
	return mc.ModelType == "qwen3_5_moe" || mc.ModelType == "glm4_moe" || mc.Arch().GptOssExperts
}

// AdaptsExperts reports whether c's MLP projections adapt the routed
// experts of mc's sparse layers: not under "all-linear" where the experts
// are fused Parameters, which PEFT reaches only with target_parameters.
func (c Config) AdaptsExperts(mc *model.Config) bool {
	return !(c.allLinear() && paramExperts(mc))
}
