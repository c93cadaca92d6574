package kernels

import "fmt"

// SigmoidRouting is the router of GLM-4.5 (INTELLECT-3) and DeepSeek-V3
// as transformers' Glm4MoeMoE.route_tokens_to_experts computes it:
// independent sigmoid scores instead of a softmax, a load-balancing
// correction bias that only chooses, group-limited top-k, and weights
// from the un-biased scores.
type SigmoidRouting struct {
	// Groups is n_group (1: no group limit) and TopKGroups topk_group,
	// the groups a token may draw its experts from.
	Groups, TopKGroups int
	// NormTopK renormalises the chosen scores to sum to 1
	// (norm_topk_prob).
	NormTopK bool
	// Scale multiplies the weights (routed_scaling_factor).
	Scale float32
}

// MoEMaxGroups bounds SigmoidRouting.Groups: a token's chosen groups are
// one 64-bit mask on the device.
const MoEMaxGroups = 64

// Check returns an error unless r can route nExperts experts topK at a
// time: the groups divide the experts, hold two experts each (a group's
// score is its top two) and together offer at least topK experts.
func (r SigmoidRouting) Check(nExperts, topK int) error {
	g, kg := r.Groups, r.TopKGroups
	switch {
	case g < 1 || g > MoEMaxGroups:
		return fmt.Errorf("sigmoid routing: %d groups, want 1 to %d", g, MoEMaxGroups)
	case kg < 1 || kg > g:
		return fmt.Errorf("sigmoid routing: top-k groups %d, want 1 to the %d groups", kg, g)
	case nExperts%g != 0:
		return fmt.Errorf("sigmoid routing: %d experts do not split into %d groups", nExperts, g)
	case g > 1 && nExperts/g < 2:
		return fmt.Errorf("sigmoid routing: %d groups of %d expert: a group's score is its top two", g, nExperts/g)
	case topK > kg*(nExperts/g):
		return fmt.Errorf("sigmoid routing: top-%d from %d groups of %d experts", topK, kg, nExperts/g)
	}
	return nil
}
