package sampler

import "github.com/grpo-dev/grpo/tokenizer"

// endOfTurnTokens are the chat formats' end-of-turn markers: ChatML's
// (Qwen), GPT-style end of text, and Llama 3's.
var endOfTurnTokens = []string{"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>"}

// StopTokenIDs returns the ids that end a turn for tok's model: its EOS
// list, then every end-of-turn marker the vocabulary has, without
// duplicates.
func StopTokenIDs(tok *tokenizer.Tokenizer) []int32 {
	ids := tok.EOS()
	seen := map[int32]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	for _, s := range endOfTurnTokens {
		if id, ok := tok.TokenID(s); ok && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}
