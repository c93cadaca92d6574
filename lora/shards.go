package lora

import (
	"fmt"
	"path/filepath"

	"github.com/grpo-dev/grpo/internal/atomicfile"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// SaveShards writes the adapters of an expert-parallel group's ranks
// (each New on a model holding its share of the experts:
// model.LoadExperts) as the one PEFT adapter directory Save writes of the
// whole model's adapter: a parameter every rank holds is written once,
// shard 0's (the ranks keep theirs identical), and each expert's from the
// rank that holds it; every expert must be held by exactly one. Models
// whose experts PEFT stores fused (Qwen3.5-MoE, GLM-4.5, gpt-oss) are not
// wired.
func SaveShards(dir string, shards []*Adapter, baseModel string) error {
	if len(shards) == 0 {
		return fmt.Errorf("saving an expert-parallel adapter: no shards")
	}
	a := shards[0]
	if fusedExperts(a.cfg) {
		return fmt.Errorf("saving an expert-parallel adapter of %s, whose experts PEFT stores fused, is not wired", a.cfg.ModelType)
	}
	cfgJSON, err := a.configJSON(baseModel, nil)
	if err != nil {
		return err
	}
	var tensors []safetensors.Tensor
	written := map[string]bool{}
	experts := 0
	for i, sh := range shards {
		for _, p := range sh.params {
			if p.Expert < 0 && i > 0 {
				continue // shard 0's
			}
			if written[p.Name] {
				return fmt.Errorf("saving an expert-parallel adapter: %s is held by two ranks", p.Name)
			}
			written[p.Name] = true
			if p.Expert >= 0 {
				experts++
			}
			t, err := safetensors.NewF32(p.Name, p.Shape[:], sh.download(p.Value))
			if err != nil {
				return err
			}
			tensors = append(tensors, t)
		}
		if err := sh.be.Sync(); err != nil {
			return fmt.Errorf("reading rank %d's adapter from %s: %w", i, sh.be.Name(), err)
		}
	}
	if want := a.expertParams() * a.cfg.NumExperts; experts != want {
		return fmt.Errorf("saving an expert-parallel adapter: the ranks hold %d expert parameters, the model's %d experts need %d", experts, a.cfg.NumExperts, want)
	}
	return atomicfile.WriteDir(dir, replaceableAdapterDir, func(tmp string) error {
		if err := safetensors.Write(filepath.Join(tmp, WeightsFileName), tensors, map[string]string{"format": "pt"}); err != nil {
			return err
		}
		return atomicfile.WriteFile(filepath.Join(tmp, ConfigFileName), cfgJSON, 0o644)
	})
}

// expertParams is the parameters each expert has in a: an A and a B per
// adapted expert projection of every sparse layer.
func (a *Adapter) expertParams() int {
	n := 0
	for _, ms := range a.experts {
		for _, m := range ms {
			if m != nil {
				n += 2
			}
		}
	}
	return n
}
