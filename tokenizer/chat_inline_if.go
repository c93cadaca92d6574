package tokenizer

import (
	"strings"

	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// gonja parses Jinja's conditional expression `A if C else B` only as a
// whole {{ }} output; inside brackets — gpt-oss's template writes
// {{- (tool_call.content_type if tool_call.content_type is defined else
// "json") + "<|message|>" }} — its parser fails. rewriteInlineIfs turns
// each such element of a (…) or […] group into a filter call gonja
// parses, ((C)|ifElseFilter((A), (B))), innermost first, before the
// template is compiled. One difference remains: both branches are
// evaluated, where Jinja evaluates one; chat templates' expressions have
// no side effects, and gonja reads a missing attribute as undefined
// rather than failing, so only the output matters.
const ifElseFilter = "__grpo_if_else"

// maxInlineIfs bounds the rewrites (each one re-lexes the template).
const maxInlineIfs = 256

func rewriteInlineIfs(src string, cfg *config.Config) string {
	if !strings.Contains(src, "if") || !strings.Contains(src, "(") && !strings.Contains(src, "[") {
		return src
	}
	// Lex with the newlines gonja will see, keeping a trailing one for
	// gonja's own lexer to drop: token positions index this text.
	src = strings.ReplaceAll(strings.ReplaceAll(src, "\r\n", "\n"), "\r", "\n")
	lexCfg := *cfg
	lexCfg.KeepTrailingNewline = true
	for n := 0; n < maxInlineIfs; n++ {
		next, ok := rewriteOneInlineIf(src, &lexCfg)
		if !ok {
			break
		}
		src = next
	}
	return src
}

// rewriteOneInlineIf rewrites the first element, in source order, that
// holds a conditional expression at its own level and none inside its
// brackets; it reports false when there is none.
func rewriteOneInlineIf(src string, cfg *config.Config) (string, bool) {
	stream := tokens.LexAll(src, cfg)
	var toks []*tokens.Token
	for ; ; stream.Next() {
		tok := stream.Current()
		if tok == nil || tok.Type == tokens.EOF || tok.Type == tokens.Error {
			break
		}
		toks = append(toks, tok)
	}
	// open[i] is the index of the bracket opening the group token i is in.
	type group struct {
		open  int
		start int // index of the element's first token
		ifAt  int // its top-level "if", or -1
		elsAt int
		inner bool // an inner group of this element holds an if
	}
	var stack []group
	for i, tok := range toks {
		switch tok.Type {
		case tokens.VariableBegin, tokens.BlockBegin, tokens.VariableEnd, tokens.BlockEnd:
			stack = stack[:0]
		case tokens.LeftParenthesis, tokens.LeftBracket:
			stack = append(stack, group{open: i, start: i + 1, ifAt: -1, elsAt: -1})
		case tokens.LeftBrace:
			stack = append(stack, group{open: -1, start: i + 1, ifAt: -1, elsAt: -1})
		case tokens.Comma, tokens.RightParenthesis, tokens.RightBracket, tokens.RightBrace:
			if len(stack) == 0 {
				continue
			}
			g := &stack[len(stack)-1]
			if g.open >= 0 && g.ifAt > g.start && !g.inner {
				return spliceInlineIf(src, toks, g.open, g.start, g.ifAt, g.elsAt, i), true
			}
			if tok.Type == tokens.Comma {
				g.start, g.ifAt, g.elsAt, g.inner = i+1, -1, -1, false
				continue
			}
			hadIf := g.ifAt >= 0 || g.inner
			stack = stack[:len(stack)-1]
			if hadIf && len(stack) > 0 {
				stack[len(stack)-1].inner = true
			}
		case tokens.Name:
			if len(stack) == 0 {
				continue
			}
			g := &stack[len(stack)-1]
			switch {
			case tok.Val == "if" && g.ifAt < 0:
				g.ifAt = i
			case tok.Val == "else" && g.ifAt >= 0 && g.elsAt < 0:
				g.elsAt = i
			}
		}
	}
	return src, false
}

// spliceInlineIf writes A if C [else B], the tokens between start and
// end, as ((C)|ifElseFilter((A)[, (B)])).
func spliceInlineIf(src string, toks []*tokens.Token, open, start, ifAt, elsAt, end int) string {
	from := toks[start-1].Pos + len(toks[start-1].Val)
	to := toks[end].Pos
	a := src[from:toks[ifAt].Pos]
	var c, b string
	if elsAt >= 0 {
		c = src[toks[ifAt].Pos+2 : toks[elsAt].Pos]
		b = ", (" + src[toks[elsAt].Pos+4:to] + ")"
	} else {
		c = src[toks[ifAt].Pos+2 : to]
	}
	return src[:from] + " ((" + c + ")|" + ifElseFilter + "((" + a + ")" + b + ")) " + src[to:]
}

// filterIfElse is the conditional expression: A when C is true, else B
// (undefined without an else, as in Jinja).
func filterIfElse(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if in.IsTrue() {
		return params.First()
	}
	if len(params.Args) > 1 {
		return params.Args[1]
	}
	return exec.AsValue(nil)
}
