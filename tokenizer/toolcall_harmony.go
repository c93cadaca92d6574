package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// HarmonyCallEnd ends a harmony turn that calls a tool: generation stops
// on it and the tool's reply follows it. HarmonyReturn ends a turn with its
// final answer; HarmonyEnd ends a message, and is how the template closes
// a final answer in the conversation's history.
const (
	HarmonyCallEnd = harmonyCall
	HarmonyReturn  = harmonyReturn
	HarmonyEnd     = harmonyEnd
)

// The harmony format's special tokens (openai/harmony; gpt-oss's
// vocabulary).
const (
	harmonyStart     = "<|start|>"
	harmonyChannel   = "<|channel|>"
	harmonyMessage   = "<|message|>"
	harmonyConstrain = "<|constrain|>"
	harmonyEnd       = "<|end|>"
	harmonyCall      = "<|call|>"
	harmonyReturn    = "<|return|>"
	// harmonyFunctions prefixes the recipient of a call of a developer
	// tool; the template declares them in `namespace functions`.
	harmonyFunctions = "functions."
)

// harmonyMsg is one message of a harmony completion: its header's role,
// channel, recipient and content type, and its body.
type harmonyMsg struct {
	role, channel, recipient, contentType string
	body                                  string
	// headerOnly: the text ended (or a new message began) before
	// <|message|>.
	headerOnly bool
}

// splitHarmony reads a completion that follows the generation prompt
// `<|start|>assistant`: messages `HEADER<|message|>BODY` ended by <|end|>,
// <|call|> or <|return|> (or the end of the text: the stop token that
// ended the turn is not part of it), each after the first opened by
// <|start|>. The first message's role is assistant, given by the prompt.
// Text between a message's end and the next <|start|> belongs to no
// message and is returned as stray.
func splitHarmony(text string) (msgs []harmonyMsg, stray string) {
	var strays []string
	first := true
	for text != "" {
		if !first {
			i := strings.Index(text, harmonyStart)
			if i < 0 {
				strays = append(strays, text)
				break
			}
			if i > 0 {
				strays = append(strays, text[:i])
			}
			text = text[i+len(harmonyStart):]
		}
		header, rest, ok := strings.Cut(text, harmonyMessage)
		// A header never holds <|start|> or an end token: the text up to
		// one is a message that never got its body.
		if cut := indexAny(header, harmonyStart, harmonyEnd, harmonyCall, harmonyReturn); cut >= 0 || !ok {
			if cut < 0 {
				cut = len(text)
			}
			m := parseHarmonyHeader(text[:cut], first)
			m.headerOnly = true
			msgs = append(msgs, m)
			text = trimEndToken(text[cut:])
			first = false
			continue
		}
		m := parseHarmonyHeader(header, first)
		end := indexAny(rest, harmonyEnd, harmonyCall, harmonyReturn, harmonyStart)
		if end < 0 {
			m.body, text = rest, ""
		} else {
			m.body, text = rest[:end], trimEndToken(rest[end:])
		}
		msgs = append(msgs, m)
		first = false
	}
	return msgs, strings.Join(strays, "")
}

// parseHarmonyHeader reads `ROLE[ to=RECIPIENT]<|channel|>CHANNEL[
// to=RECIPIENT][ <|constrain|>TYPE| TYPE]`: the recipient may stand before
// or after the channel (gpt-oss writes it after; its template renders it
// before). The first message's header has no role (the prompt gave it).
func parseHarmonyHeader(h string, first bool) harmonyMsg {
	var m harmonyMsg
	pre, post, hasChannel := strings.Cut(h, harmonyChannel)
	preFields := strings.Fields(pre)
	if first {
		m.role = "assistant"
	} else if len(preFields) > 0 && !strings.HasPrefix(preFields[0], "to=") {
		m.role, preFields = preFields[0], preFields[1:]
	}
	var postFields []string
	if hasChannel {
		post = strings.ReplaceAll(post, harmonyConstrain, " "+harmonyConstrain)
		postFields = strings.Fields(post)
		if len(postFields) > 0 && !strings.HasPrefix(postFields[0], "to=") && !strings.HasPrefix(postFields[0], harmonyConstrain) {
			m.channel, postFields = postFields[0], postFields[1:]
		}
	}
	for _, f := range append(preFields, postFields...) {
		switch {
		case strings.HasPrefix(f, "to="):
			m.recipient = f[len("to="):]
		case strings.HasPrefix(f, harmonyConstrain):
			m.contentType = f[len(harmonyConstrain):]
		case m.contentType == "":
			m.contentType = f
		}
	}
	return m
}

// trimEndToken drops the token that ends a message from the front of s.
func trimEndToken(s string) string {
	for _, tok := range []string{harmonyEnd, harmonyCall, harmonyReturn} {
		if rest, ok := strings.CutPrefix(s, tok); ok {
			return rest
		}
	}
	return s
}

func indexAny(s string, subs ...string) int {
	at := -1
	for _, sub := range subs {
		if i := strings.Index(s, sub); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	return at
}

// parseHarmony reads a gpt-oss turn as the harmony format defines it
// (and vLLM's openai tool parser reads it): each assistant message
// addressed to=functions.NAME is a call of NAME whose body is its JSON
// arguments; the final channel is the content, and commentary without a
// recipient (a preamble the user sees) joins it; analysis is the
// reasoning. A message to any other recipient (a built-in tool such as
// browser.search or python, which grpo does not run) is a call with Err
// set, so the model hears of it; messages in another role than
// assistant (the model writing a tool's answer itself) are dropped from
// the message, as is text outside any message, though the trained tokens
// keep them.
func parseHarmony(text string) ParsedTurn {
	if !strings.Contains(text, harmonyMessage) {
		// No message at all: the model ignored the format.
		return ParsedTurn{Content: text}
	}
	msgs, _ := splitHarmony(text)
	var turn ParsedTurn
	var content, reasoning []string
	for _, m := range msgs {
		if m.role != "assistant" {
			continue
		}
		if m.recipient != "" {
			turn.Calls = append(turn.Calls, readHarmonyCall(m))
			continue
		}
		if m.headerOnly {
			continue
		}
		switch m.channel {
		case "analysis":
			reasoning = append(reasoning, m.body)
		case "final", "commentary", "":
			content = append(content, m.body)
		}
	}
	turn.Content = strings.Join(content, "\n")
	turn.Reasoning = strings.Join(reasoning, "\n")
	return turn
}

// readHarmonyCall reads a message addressed to a tool.
func readHarmonyCall(m harmonyMsg) ParsedToolCall {
	name, isFunction := strings.CutPrefix(m.recipient, harmonyFunctions)
	c := ParsedToolCall{Name: name}
	switch {
	case !isFunction:
		c.Name = m.recipient
		c.Err = fmt.Sprintf("recipient %q is not one of the functions; call a tool as to=functions.NAME", m.recipient)
	case name == "":
		c.Err = "the recipient names no function; call a tool as to=functions.NAME"
	case m.headerOnly:
		c.Err = fmt.Sprintf("call of %q has no <|message|> with its arguments", name)
	case m.contentType != "" && m.contentType != "json":
		c.Err = fmt.Sprintf("call of %q has content type %q; write its arguments as <|constrain|>json", name, m.contentType)
	default:
		args := bytes.TrimSpace([]byte(m.body))
		switch {
		case len(args) == 0:
			c.Arguments = json.RawMessage("{}")
		case args[0] == '{' && json.Valid(args):
			c.Arguments = args
		default:
			c.Err = fmt.Sprintf("call of %q: its message must be a JSON object of arguments", name)
		}
	}
	return c
}
