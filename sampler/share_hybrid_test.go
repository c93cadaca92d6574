package sampler

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// TestSharedPromptStateMatchesOwnPrefill is the prefix-sharing bar for a
// hybrid model (qwen3_5-tiny: three gated DeltaNet layers, one gated
// attention layer): groups of 4 whose followers take a copy of the
// prompt's linear-attention states (and share its KV blocks) sample the
// same tokens, with log-probs within 1e-5, as sequences that each
// prefill the prompt, through a second turn that continues each
// sequence's own state; and the prompt is computed once per group.
func TestSharedPromptStateMatchesOwnPrefill(t *testing.T) {
	m, err := model.Load("../testdata/models/qwen3_5-tiny", cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	prompts := sharePrompts()
	const g = 4
	cfg := Config{Slots: 8, MaxLen: 48, BlockSize: 4}
	shared := playGroups(t, m, cfg, prompts, g)
	cfg.NoPrefixSharing = true
	own := playGroups(t, m, cfg, prompts, g)
	compareRuns(t, shared, own, 1e-5)
	if shared.stats.Forked != len(prompts)*(g-1) {
		t.Errorf("%d sequences forked a prompt, want %d", shared.stats.Forked, len(prompts)*(g-1))
	}
	promptTokens := 21 + 16
	if saved := own.stats.ForwardTokens - shared.stats.ForwardTokens; saved != (g-1)*(promptTokens-2) {
		t.Errorf("sharing saved %d forward tokens, want (g−1)·(prompt − 1) per prompt = %d", saved, (g-1)*(promptTokens-2))
	}
}
