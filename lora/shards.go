package lora

import "fmt"

// SaveShards writes the adapters of an expert-parallel group's ranks
// (each New on a model holding its share of the experts:
// model.LoadExperts), in rank order, as the one PEFT adapter directory
// Save writes of the whole model's adapter: a parameter every rank holds
// is written once, shard 0's (the ranks keep theirs identical), and each
// expert's from the rank that holds it, or where PEFT stores the experts
// fused (Qwen3.5-MoE, GLM-4.5, gpt-oss) every rank's fused together;
// every expert must be held by exactly one rank.
func SaveShards(dir string, shards []*Adapter, baseModel string) error {
	if len(shards) == 0 {
		return fmt.Errorf("saving an expert-parallel adapter: no shards")
	}
	a := shards[0]
	written := map[string]bool{}
	experts, next := 0, 0
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
		}
		if sh.held.first != next && sh.held.n > 0 {
			return fmt.Errorf("saving an expert-parallel adapter: rank %d holds experts from %d, where the ranks before it end at expert %d; give the ranks in order", i, sh.held.first, next)
		}
		next = sh.held.first + sh.held.n
	}
	if want := a.expertParams() * a.cfg.NumExperts; experts != want {
		return fmt.Errorf("saving an expert-parallel adapter: the ranks hold %d expert parameters, the model's %d experts need %d", experts, a.cfg.NumExperts, want)
	}
	return save(dir, shards, baseModel)
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
