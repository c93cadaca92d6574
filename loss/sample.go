package loss

// Sample is one rollout ready for the policy update.
type Sample struct {
	Prompt     []int32
	Completion []int32 // every token after the prompt, model's and environment's
	// ModelMask marks the completion tokens the model generated (true) as
	// opposed to environment replies in multi-turn rollouts; nil means all.
	ModelMask []bool
	// OldLogp is the behaviour policy's log-prob of each completion token
	// (the sampler's), len(Completion); ignored where ModelMask is false.
	OldLogp   []float32
	Advantage float32
	Truncated bool // stopped by max_tokens rather than a stop token
	// Experts, for a mixture-of-experts policy, is the routing each of
	// the SeqLen() tokens got when it was sampled (model.Batch.Experts'
	// layout, Config.RoutingLen(SeqLen()) entries); the training forward
	// replays it. nil routes afresh; a micro-batch replays only when all
	// its samples carry one.
	Experts []int32
}

func (s *Sample) trained(j int, cfg Config) bool {
	if cfg.MaskTruncated && s.Truncated {
		return false
	}
	return s.ModelMask == nil || s.ModelMask[j]
}

// SeqLen is the number of tokens a sample puts through the forward pass:
// every token but the last, which is only a target.
func (s *Sample) SeqLen() int { return len(s.Prompt) + len(s.Completion) - 1 }
