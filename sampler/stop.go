package sampler

import "github.com/grpo-dev/grpo/tokenizer"

// endOfTurnTokens are the chat formats' end-of-turn markers: ChatML's
// (Qwen), GPT-style end of text, Llama 3's, and harmony's (gpt-oss) two
// ends of a turn, <|return|> after the final answer and <|call|> after a
// tool call (its <|end|> ends a message, not the turn: the model goes on
// with the next one). gpt-oss's generation_config.json lists both; these
// keep a directory without it from generating past a call.
var endOfTurnTokens = []string{"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<|return|>", "<|call|>"}

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
