package sampler

import "github.com/grpo-dev/grpo/tokenizer"

// endOfTurnTokens are the chat formats' end-of-turn markers: ChatML's
// (Qwen), GPT-style end of text, Llama 3's; harmony's (gpt-oss) two ends
// of a turn, <|return|> after the final answer and <|call|> after a tool
// call (its <|end|> ends a message, not the turn: the model goes on with
// the next one); and GLM-4.5's, which ends a turn by opening the next
// one, <|user|> or <|observation|> (the tool results after a call). The
// checkpoints' generation_config.json lists these; the list keeps a
// directory without it from generating past them.
var endOfTurnTokens = []string{"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<|return|>", "<|call|>", "<|user|>", "<|observation|>"}

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
