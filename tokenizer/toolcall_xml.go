package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Qwen3.5's (and Qwen3-Coder's) tool calls: XML tags around raw values,
//
//	<tool_call>
//	<function=NAME>
//	<parameter=ARG>
//	VALUE
//	</parameter>
//	</function>
//	</tool_call>
//
// several per turn. Values are not JSON: strings are written raw, numbers
// and booleans as Python prints them, objects and lists as JSON, so the
// reader needs the tool's parameter schema to type them (xmlvalue.go).
const (
	xmlFuncOpen   = "<function="
	xmlFuncClose  = "</function>"
	xmlParamOpen  = "<parameter="
	xmlParamClose = "</parameter>"
)

// parseQwenXML reads the <tool_call> blocks after the turn's thinking (as
// parseHermes does). The content is the text before the first block, less
// the newlines the template writes between content and calls. Unlike
// vLLM's qwen3_coder parser, which guesses around a missing </parameter> or
// </function>, a block that is not well formed becomes a call with Err
// set, saying what to fix: the model learns the format from its errors. A
// block whose </tool_call> is missing at the end of the turn (it may have
// stopped on a stop string) or before the next <tool_call> is read if its
// function is complete.
func parseQwenXML(text string, tools []json.RawMessage) ParsedTurn {
	from := 0
	if i := strings.LastIndex(text, "</think>"); i >= 0 {
		from = i + len("</think>")
	}
	first := strings.Index(text[from:], hermesOpen)
	if first < 0 {
		return ParsedTurn{Content: text}
	}
	first += from
	turn := ParsedTurn{Content: strings.TrimRight(text[:first], "\n")}
	schemas := toolProperties(tools)
	rest := text[first:]
	for {
		i := strings.Index(rest, hermesOpen)
		if i < 0 {
			return turn
		}
		body := rest[i+len(hermesOpen):]
		c, used := readXMLCall(body, schemas)
		turn.Calls = append(turn.Calls, c)
		rest = body[used:]
	}
}

// readXMLCall reads one call from the text after <tool_call>. It returns
// the call and how much of body it used: through </tool_call> when the
// call is well formed; after an error, up to the block's </tool_call> or
// the next <tool_call>, so one bad block costs one call.
func readXMLCall(body string, schemas map[string]map[string]json.RawMessage) (ParsedToolCall, int) {
	fail := func(format string, args ...any) (ParsedToolCall, int) {
		return ParsedToolCall{Err: fmt.Sprintf(format, args...) + "; write <tool_call> <function=NAME> <parameter=ARG> VALUE </parameter> </function> </tool_call>, each tag and each value on lines of their own"}, skipBlock(body)
	}
	s := strings.TrimLeft(body, " \t\r\n")
	if !strings.HasPrefix(s, xmlFuncOpen) {
		return fail("<tool_call> does not start with <function=NAME>")
	}
	s = s[len(xmlFuncOpen):]
	name, s, ok := strings.Cut(s, ">")
	if !ok || strings.Contains(name, "\n") {
		return fail("<function= is not closed by '>'")
	}
	if name == "" {
		return fail("<function=> has no function name")
	}
	if strings.ContainsAny(name, "{}<>\"' \t\r") {
		return fail("%q is not a function name", name)
	}
	props := schemas[name]
	args := newArgObject()
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		switch {
		case strings.HasPrefix(s, xmlFuncClose):
			s = strings.TrimLeft(s[len(xmlFuncClose):], " \t\r\n")
			switch {
			case strings.HasPrefix(s, hermesClose):
				s = s[len(hermesClose):]
			case s != "" && !strings.HasPrefix(s, hermesOpen):
				return fail("%s of %q is not followed by %s", xmlFuncClose, name, hermesClose)
			}
			return ParsedToolCall{Name: name, Arguments: args.json()}, len(body) - len(s)
		case strings.HasPrefix(s, xmlParamOpen):
			s = s[len(xmlParamOpen):]
			arg, after, ok := strings.Cut(s, ">")
			if !ok || strings.Contains(arg, "\n") {
				return fail("<parameter= in %q is not closed by '>'", name)
			}
			if arg == "" {
				return fail("<parameter=> in %q has no parameter name", name)
			}
			value, next, ok := paramValue(after)
			if !ok {
				return fail("parameter %q of %q is not closed by %s", arg, name, xmlParamClose)
			}
			args.set(arg, typedValue(value, props[arg]))
			s = next
		case s == "":
			return fail("<function=%s> is not closed by %s", name, xmlFuncClose)
		default:
			return fail("unexpected text %q inside <function=%s>, where <parameter=ARG> or %s belongs", clip(s, 20), name, xmlFuncClose)
		}
	}
}

// paramValue reads a value up to its structural </parameter>: the first
// one followed (after whitespace) by another <parameter=, </function> or
// the end of the text, and not paired with a <parameter= that opens a line
// inside the value. So a value that is itself code about this format
// (holding "</parameter>", or a whole literal call) is not cut short; the
// pairing is vLLM's. When pairing leaves no end (a lone literal
// <parameter= in the value), the first structural </parameter> ends it.
// The template writes one newline after the opening tag and one before the
// closing tag; both belong to the format.
func paramValue(s string) (value, rest string, ok bool) {
	s = strings.TrimPrefix(s, "\n")
	if value, rest, ok = valueEnd(s, true); !ok {
		value, rest, ok = valueEnd(s, false)
	}
	return value, rest, ok
}

func valueEnd(s string, pair bool) (value, rest string, ok bool) {
	depth := 0
	for at := 0; ; {
		i := strings.Index(s[at:], xmlParamClose)
		if i < 0 {
			return "", "", false
		}
		end := at + i
		if pair {
			depth += lineOpens(s, at, end)
		}
		if depth > 0 {
			depth--
			at = end + len(xmlParamClose)
			continue
		}
		after := s[end+len(xmlParamClose):]
		next := strings.TrimLeft(after, " \t\r\n")
		if next == "" || strings.HasPrefix(next, xmlParamOpen) || strings.HasPrefix(next, xmlFuncClose) {
			return strings.TrimSuffix(s[:end], "\n"), after, true
		}
		at = end + len(xmlParamClose)
	}
}

// lineOpens counts the <parameter= tags in s[from:to] that start a line
// of the value (or the value itself).
func lineOpens(s string, from, to int) int {
	n := 0
	for i := from; i < to; {
		j := strings.Index(s[i:to], xmlParamOpen)
		if j < 0 {
			break
		}
		if i+j == 0 || s[i+j-1] == '\n' {
			n++
		}
		i += j + len(xmlParamOpen)
	}
	return n
}

// skipBlock is how much of a malformed block's body to pass over: up to
// its </tool_call>, or to the next <tool_call> if that comes first.
func skipBlock(body string) int {
	end := len(body)
	if i := strings.Index(body, hermesClose); i >= 0 {
		end = i + len(hermesClose)
	}
	if i := strings.Index(body, hermesOpen); i >= 0 && i < end {
		end = i
	}
	return end
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
