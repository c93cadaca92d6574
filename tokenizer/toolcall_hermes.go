package tokenizer

import "strings"

const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"
)

// parseHermes reads <tool_call>{json}</tool_call> blocks. Blocks inside the
// turn's thinking (before its last </think>) are reasoning, not calls. The
// content is the text before the first call, less the one newline Qwen's
// template writes between content and calls; text between or after calls
// is dropped from the message (vLLM's hermes parser does the same), though
// the trained tokens keep it. A block left open at the end of the turn is
// still read (the turn may have stopped on a stop string); one that is not
// valid JSON is a call with Err set.
func parseHermes(text string) ParsedTurn {
	from := 0
	if i := strings.LastIndex(text, "</think>"); i >= 0 {
		from = i + len("</think>")
	}
	first := strings.Index(text[from:], hermesOpen)
	if first < 0 {
		return ParsedTurn{Content: text}
	}
	first += from
	turn := ParsedTurn{Content: strings.TrimSuffix(text[:first], "\n")}
	rest := text[first:]
	for {
		i := strings.Index(rest, hermesOpen)
		if i < 0 {
			break
		}
		rest = rest[i+len(hermesOpen):]
		body, after, closed := strings.Cut(rest, hermesClose)
		if !closed {
			// An open block runs to the next <tool_call> or the end.
			if j := strings.Index(rest, hermesOpen); j >= 0 {
				body, after = rest[:j], rest[j:]
			}
		}
		c := decodeCall([]byte(strings.TrimSpace(body)), "arguments", "parameters")
		if c.Err != "" && !closed {
			c.Err = "<tool_call> is not closed by </tool_call>; " + c.Err
		}
		turn.Calls = append(turn.Calls, c)
		rest = after
	}
	return turn
}
