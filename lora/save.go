package lora

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/internal/atomicfile"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// peftConfigFile is adapter_config.json as grpo writes it. Fields are in
// the alphabetical order PEFT's save_pretrained (json sort_keys) uses. The
// set is the one PEFT has written since 0.9 (use_dora); keys that later
// versions added with null defaults (corda_config, eva_config, lora_bias,
// …) are left out so that older PEFT releases, which reject unknown keys,
// still load the file.
type peftConfigFile struct {
	AlphaPattern      map[string]float64 `json:"alpha_pattern"`
	AutoMapping       *struct{}          `json:"auto_mapping"`
	BaseModel         string             `json:"base_model_name_or_path"`
	Bias              string             `json:"bias"`
	FanInFanOut       bool               `json:"fan_in_fan_out"`
	InferenceMode     bool               `json:"inference_mode"`
	InitLoraWeights   bool               `json:"init_lora_weights"`
	LayersPattern     *string            `json:"layers_pattern"`
	LayersToTransform *[]int             `json:"layers_to_transform"`
	LoraAlpha         float64            `json:"lora_alpha"`
	LoraDropout       float64            `json:"lora_dropout"`
	ModulesToSave     *[]string          `json:"modules_to_save"`
	PeftType          string             `json:"peft_type"`
	R                 int                `json:"r"`
	RankPattern       map[string]int     `json:"rank_pattern"`
	Revision          *string            `json:"revision"`
	TargetModules     []string           `json:"target_modules"`
	// TargetParameters is written only for fused experts (experts_fused.go):
	// PEFT releases before it (0.17) reject the key.
	TargetParameters []string `json:"target_parameters,omitempty"`
	TaskType         string   `json:"task_type"`
	UseDora          bool     `json:"use_dora"`
	UseRSLoRA        bool     `json:"use_rslora"`
}

// Save writes a as a PEFT adapter directory: adapter_config.json and
// adapter_model.safetensors (F32, PEFT's key names, {"format": "pt"}
// metadata as save_pretrained writes). baseModel is recorded as
// base_model_name_or_path (a hub id such as "Qwen/Qwen3-0.6B" lets vLLM and
// PEFT find the base model). The directory is replaced atomically; an
// existing dir is replaced only if it is an adapter directory or empty.
func Save(dir string, a *Adapter, baseModel string) error {
	return save(dir, []*Adapter{a}, baseModel)
}

// save writes the adapter whose parameters shards hold (Save: one;
// SaveShards: a group's ranks, each holding the replicated parameters and
// its experts, in order): each replicated parameter shards[0]'s, each
// expert's from the shard that holds it, or where PEFT stores the experts
// fused, every shard's fused together.
func save(dir string, shards []*Adapter, baseModel string) error {
	a := shards[0]
	fused, fusedRanks, meta, err := a.fusedTensors(shards)
	if err != nil {
		return err
	}
	cfgJSON, err := a.configJSON(baseModel, fusedRanks)
	if err != nil {
		return err
	}
	metadata := map[string]string{"format": "pt"}
	if len(fused) > 0 {
		metadata[fusedMetaKey] = meta
	}
	var tensors []safetensors.Tensor
	for i, sh := range shards {
		for _, p := range sh.params {
			if p.Expert < 0 && i > 0 || p.Expert >= 0 && fusedExperts(a.cfg) {
				continue // shard 0's, or written fused
			}
			t, err := safetensors.NewF32(p.Name, p.Shape[:], sh.download(p.Value))
			if err != nil {
				return err
			}
			tensors = append(tensors, t)
		}
	}
	tensors = append(tensors, fused...)
	for _, sh := range shards {
		if err := sh.be.Sync(); err != nil {
			return fmt.Errorf("reading the adapter from %s: %w", sh.be.Name(), err)
		}
	}
	return atomicfile.WriteDir(dir, replaceableAdapterDir, func(tmp string) error {
		if err := safetensors.Write(filepath.Join(tmp, WeightsFileName), tensors, metadata); err != nil {
			return err
		}
		return atomicfile.WriteFile(filepath.Join(tmp, ConfigFileName), cfgJSON, 0o644)
	})
}

// moduleNames returns the rank, alpha and HF module names of projection p
// of layer as adapted: one name for a dense projection, every expert's in
// a mixture-of-experts layer, none when p is not adapted there or its
// experts are written fused (no modules: target_parameters).
func (a *Adapter) moduleNames(layer int, p model.Proj) (int, float64, []string) {
	if m := a.mods[layer][p]; m != nil {
		return m.rank, m.alpha, []string{moduleName(a.cfg, layer, p)}
	}
	if rank, alpha, ok := a.ExpertModule(layer, p); ok && !fusedExperts(a.cfg) {
		var names []string
		for e := range a.cfg.NumExperts {
			names = append(names, expertModuleName(a.cfg, layer, e, p))
		}
		return rank, alpha, names
	}
	return 0, 0, nil
}

// replaceableAdapterDir allows replacing an empty directory or a previous
// adapter (one that holds adapter_config.json), nothing else.
func replaceableAdapterDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, ConfigFileName)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: exists and is not an adapter directory (no %s); refusing to replace it — choose another path or remove it", dir, ConfigFileName)
	}
	return nil
}
