package tokenizer

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unsafe"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// A chat template comes with a downloaded model, so it is untrusted code:
// gonja runs it unbounded, and a template that recurses without end
// overflows the Go stack (fatal, no recover() catches it) while one that
// loops long holds the process for minutes. Every render therefore runs
// under a budget. gonja has no hook for one, so the bounds sit where every
// unbounded path must pass, all installed when a template is compiled:
//
//   - every control structure ({% for %}, {% if %}, {% call %}…) is wrapped
//     by the parser: its execution is one level of depth;
//   - every macro, when its {% macro %} runs, is replaced by a wrapper that
//     counts a level of depth and a step per call, and caps its output;
//   - every {% for %} body starts with a tick node: one step per iteration,
//     and a recursive loop's loop() counts a level of depth;
//   - range() is ours: it refuses a range longer than the step budget
//     before building it (gonja's feeds a goroutine that leaks on abort);
//   - +, * and ~ are rewritten into guarded filters that refuse a string or
//     list larger than the size bound before it is built;
//   - the output goes to a writer that stops at the size bound;
//   - every step, level and write checks the deadline.
//
// The first bound exceeded is kept in the budget and returned however
// gonja reports (or swallows) the error it causes. Templates that load
// other templates are refused (transformers renders chat templates with no
// loader; gonja's default one reads local files).

// ChatLimits bound one render of a chat template. A zero field takes its
// default; real templates stay far below every default.
type ChatLimits struct {
	// MaxDepth bounds the nesting of macro calls, control structures and
	// recursive loops (default 200), and the nesting of brackets and blocks
	// in the template's source.
	MaxDepth int
	// MaxSteps bounds loop iterations plus macro calls (default 1<<18; a
	// 2000-turn conversation through Qwen3's template takes about 4000).
	MaxSteps int
	// MaxBytes bounds the output and any string built on the way (default
	// 32 MiB); lists are bounded to MaxSteps items.
	MaxBytes int
	// Timeout bounds the render's wall time (default 10 s).
	Timeout time.Duration
}

// DefaultChatLimits are the bounds a render runs under when ChatOptions
// sets none.
var DefaultChatLimits = ChatLimits{MaxDepth: 200, MaxSteps: 1 << 18, MaxBytes: 32 << 20, Timeout: 10 * time.Second}

// maxTemplateBytes caps a template's source: real ones are a few KB, and
// gonja's lexer and parser hold the whole source several times over.
const maxTemplateBytes = 1 << 20

func (l ChatLimits) withDefaults() ChatLimits {
	d := DefaultChatLimits
	if l.MaxDepth > 0 {
		d.MaxDepth = l.MaxDepth
	}
	if l.MaxSteps > 0 {
		d.MaxSteps = l.MaxSteps
	}
	if l.MaxBytes > 0 {
		d.MaxBytes = l.MaxBytes
	}
	if l.Timeout > 0 {
		d.Timeout = l.Timeout
	}
	return d
}

// budgetKey holds the render's budget in its context. It is no
// identifier, so no template can read, set or shadow it.
const budgetKey = "\x00grpo-budget"

type renderBudget struct {
	limits   ChatLimits
	source   string // "the chat template" or "the chat template in DIR/tokenizer_config.json"
	deadline time.Time
	depth    int
	steps    int
	err      error // the first bound exceeded; sticky
}

func newBudget(source string, limits ChatLimits) *renderBudget {
	limits = limits.withDefaults()
	return &renderBudget{limits: limits, source: source, deadline: time.Now().Add(limits.Timeout)}
}

func budgetOf(ctx *exec.Context) *renderBudget {
	v, _ := ctx.Get(budgetKey)
	b, _ := v.(*renderBudget)
	return b
}

// The faults a bound reports are the template's: a render of a real
// template on any conversation stays far below them.
const fixTemplate = "the template does not finish on this conversation: fix or replace its chat_template"

func (b *renderBudget) fail(format string, args ...any) error {
	if b.err == nil {
		b.err = fmt.Errorf("%s %s", b.source, fmt.Sprintf(format, args...))
	}
	return b.err
}

func (b *renderBudget) sizeError() error {
	return b.fail("builds a text larger than %s; if the conversation really is that long, shorten it, else fix or replace its chat_template", mib(b.limits.MaxBytes))
}

func (b *renderBudget) check() error {
	if b.err != nil {
		return b.err
	}
	if time.Now().After(b.deadline) {
		return b.fail("ran longer than %v; %s", b.limits.Timeout, fixTemplate)
	}
	return nil
}

func (b *renderBudget) step() error {
	b.steps++
	if b.steps > b.limits.MaxSteps {
		return b.fail("runs more than %d loop iterations and macro calls; %s", b.limits.MaxSteps, fixTemplate)
	}
	return b.check()
}

func (b *renderBudget) enter() error {
	b.depth++
	if b.depth > b.limits.MaxDepth {
		return b.fail("is nested deeper than %d levels (a macro or recursive loop that calls itself without end?); %s", b.limits.MaxDepth, fixTemplate)
	}
	return b.check()
}

func (b *renderBudget) exit() { b.depth-- }

func mib(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// boundedWriter is the render's output: it refuses to grow past MaxBytes,
// which also stops gonja at the next thing it writes.
type boundedWriter struct {
	b   *renderBudget
	out strings.Builder
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	if err := w.b.check(); err != nil {
		return 0, err
	}
	if w.out.Len()+len(p) > w.b.limits.MaxBytes {
		return 0, w.b.sizeError()
	}
	return w.out.Write(p)
}

// checkOutput bounds what a macro, caller or recursive loop has written so
// far: gonja renders those into a buffer of its own, not into the bounded
// writer, and returns it only when they finish.
func checkOutput(r *exec.Renderer, b *renderBudget) error {
	n := 0
	switch out := r.Output.(type) {
	case *strings.Builder:
		n = out.Len()
	case *bytes.Buffer:
		n = out.Len()
	}
	if n > b.limits.MaxBytes {
		return b.sizeError()
	}
	return nil
}

// guardedStructure wraps a control structure so its execution counts one
// level of depth; a {% macro %} also wraps the macro it defines.
type guardedStructure struct {
	exec.ControlStructure
}

func (g *guardedStructure) Execute(r *exec.Renderer, block *nodes.ControlStructureBlock) error {
	b := budgetOf(r.Environment.Context)
	if err := b.enter(); err != nil {
		return err
	}
	defer b.exit()
	if err := checkOutput(r, b); err != nil {
		return err
	}
	err := g.ControlStructure.Execute(r, block)
	if m, ok := g.ControlStructure.(interface{ MacroName() string }); ok && err == nil {
		wrapMacro(r.Environment.Context, m.MacroName(), b)
	}
	if b.err != nil {
		return b.err
	}
	return err
}

// macroStructure names the macro that gonja's {% macro %} defines.
type macroStructure struct {
	exec.ControlStructure
	name string
}

func (m *macroStructure) MacroName() string { return m.name }

func wrapMacro(ctx *exec.Context, name string, b *renderBudget) {
	v, ok := ctx.Get(name)
	if !ok {
		return
	}
	inner, ok := v.(exec.Macro)
	if !ok {
		return
	}
	ctx.Set(name, exec.Macro(func(params *exec.VarArgs) *exec.Value {
		if err := b.step(); err != nil {
			return exec.AsValue(err)
		}
		if err := b.enter(); err != nil {
			return exec.AsValue(err)
		}
		defer b.exit()
		out := inner(params)
		if b.err != nil {
			return exec.AsValue(b.err)
		}
		if out.IsString() && out.Len() > b.limits.MaxBytes {
			return exec.AsValue(b.sizeError())
		}
		return out
	}))
}

// loopTick is the first node of every {% for %} body: one step per
// iteration, and a recursive loop's loop() made to count depth.
type loopTick struct{ at *tokens.Token }

func (t *loopTick) Position() *tokens.Token { return t.at }
func (t *loopTick) String() string          { return "loopTick" }

func (t *loopTick) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	ctx := r.Environment.Context
	b := budgetOf(ctx)
	if err := b.step(); err != nil {
		return err
	}
	if err := checkOutput(r, b); err != nil {
		return err
	}
	// A recursive loop binds loop to the function that renders the body
	// again; the tick's context is the body's, so shadowing it here covers
	// every call in this iteration.
	if v, ok := ctx.Get("loop"); ok {
		if recurse, ok := v.(func(*exec.VarArgs) *exec.Value); ok {
			ctx.Set("loop", func(va *exec.VarArgs) *exec.Value {
				if err := b.enter(); err != nil {
					return exec.AsValue(err)
				}
				defer b.exit()
				return recurse(va)
			})
		}
	}
	return nil
}

// refusedStructures load other templates: chat templates render without a
// loader in transformers, and gonja's default loader reads local files.
var refusedStructures = []string{"block", "extends", "from", "import", "include"}

// guardedStructures is gonja's control-structure set with every parser
// wrapped so the structures it builds are guarded.
func guardedStructures() *exec.ControlStructureSet {
	names := []string{"autoescape", "filter", "for", "if", "macro", "raw", "set", "with", "do", "break", "continue", "trans", "call"}
	set := map[string]parser.ControlStructureParser{}
	for _, name := range names {
		inner, ok := builtins.ControlStructures.Get(name)
		if !ok {
			panic("gonja has no control structure " + name)
		}
		set[name] = func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
			cs, err := inner(p, args)
			if err != nil {
				return nil, err
			}
			ecs, ok := cs.(exec.ControlStructure)
			if !ok {
				return cs, nil
			}
			switch name {
			case "for":
				body := forBody(cs)
				tick := &nodes.ControlStructureBlock{Location: cs.Position(), Name: "loopTick", ControlStructure: &loopTick{at: cs.Position()}}
				body.Nodes = append([]nodes.Node{tick}, body.Nodes...)
			case "macro":
				ecs = &macroStructure{ecs, macroName(cs)}
			}
			return &guardedStructure{ecs}, nil
		}
	}
	for _, name := range refusedStructures {
		set[name] = func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
			return nil, args.Error(fmt.Sprintf("{%% %s %%}: chat templates cannot load other templates (transformers renders them without a loader)", name), nil)
		}
	}
	return exec.NewControlStructureSet(set)
}

// forBody and macroName read gonja's exported fields by name, so a gonja
// upgrade that renames them fails loudly at the first compile.
func forBody(cs nodes.ControlStructure) *nodes.Wrapper {
	w, ok := reflect.ValueOf(cs).Elem().FieldByName("BodyWrapper").Interface().(*nodes.Wrapper)
	if !ok || w == nil {
		panic(fmt.Sprintf("gonja's %T has no BodyWrapper", cs))
	}
	return w
}

func macroName(cs nodes.ControlStructure) string {
	m, ok := reflect.ValueOf(cs).Elem().FieldByName("Macro").Interface().(*nodes.Macro)
	if !ok || m == nil {
		panic(fmt.Sprintf("gonja's %T has no Macro", cs))
	}
	return m.Name
}

// rangeFunction is Python's range, refused when longer than the step
// budget before any of it is built.
func rangeFunction(e *exec.Evaluator, params *exec.VarArgs) ([]int, error) {
	args := make([]int, len(params.Args))
	for i, a := range params.Args {
		if !a.IsInteger() {
			return nil, exec.ErrInvalidCall(fmt.Errorf("expected signature is [start, ]stop[, step] where all arguments are integers"))
		}
		args[i] = a.Integer()
	}
	start, stop, step := 0, 0, 1
	switch len(args) {
	case 1:
		stop = args[0]
	case 2:
		start, stop = args[0], args[1]
	case 3:
		start, stop, step = args[0], args[1], args[2]
	default:
		return nil, exec.ErrInvalidCall(fmt.Errorf("expected signature is [start, ]stop[, step] where all arguments are integers"))
	}
	if step == 0 {
		return nil, exec.ErrInvalidCall(fmt.Errorf("step cannot be 0"))
	}
	n := 0
	if step > 0 && stop > start {
		n = int((int64(stop) - int64(start) + int64(step) - 1) / int64(step))
	} else if step < 0 && stop < start {
		n = int((int64(start) - int64(stop) - int64(step) - 1) / -int64(step))
	}
	if b := budgetOf(e.Environment.Context); b != nil && n > b.limits.MaxSteps {
		call := make([]string, len(args))
		for i, a := range args {
			call[i] = fmt.Sprint(a)
		}
		return nil, b.fail("calls range(%s), more than %d loop iterations; %s", strings.Join(call, ", "), b.limits.MaxSteps, fixTemplate)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = start + i*step
	}
	return out, nil
}

// The guarded operators: a+b, a*b and a~b are compiled into
// a|OP(b), where OP checks the size of the result and then has gonja's own
// evaluator compute it, so the semantics stay gonja's.
var guardedOps = map[tokens.Type]string{
	tokens.Addition: "\x00add",
	tokens.Multiply: "\x00mul",
	tokens.Tilde:    "\x00cat",
}

func isGuardedOp(name string) bool {
	for _, op := range guardedOps {
		if op == name {
			return true
		}
	}
	return false
}

const (
	opLeft  = "\x00left"
	opRight = "\x00right"
)

func opFilter(typ tokens.Type, val string) exec.FilterFunction {
	op := &nodes.BinaryExpression{
		Left:     &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: opLeft}},
		Right:    &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: opRight}},
		Operator: &nodes.BinOperator{Token: &tokens.Token{Type: typ, Val: val}},
	}
	return func(e *exec.Evaluator, left *exec.Value, params *exec.VarArgs) *exec.Value {
		if left.IsError() {
			return left
		}
		right := params.First()
		b := budgetOf(e.Environment.Context)
		if b == nil {
			return exec.AsValue(fmt.Errorf("chat template operator outside a render"))
		}
		if err := b.check(); err != nil {
			return exec.AsValue(err)
		}
		// The size checks below and gonja's operator turn the operands
		// into text; measure them first.
		if err := b.measure(left); err != nil {
			return exec.AsValue(err)
		}
		if err := b.measure(right); err != nil {
			return exec.AsValue(err)
		}
		floats := left.IsFloat() || right.IsFloat()
		switch {
		case typ == tokens.Multiply && left.IsString() && !floats:
			n := right.Integer()
			if n <= 0 { // Python's "x" * -1 is ""; strings.Repeat panics
				return exec.AsValue("")
			}
			if left.Len() > 0 && n > b.limits.MaxBytes/len(left.String()) {
				return exec.AsValue(b.sizeError())
			}
		case typ == tokens.Addition && left.IsList():
			if left.Len()+right.Len() > b.limits.MaxSteps {
				return exec.AsValue(b.fail("builds a list longer than %d items; %s", b.limits.MaxSteps, fixTemplate))
			}
		case typ == tokens.Tilde || (typ == tokens.Addition && !floats && (left.IsString() || right.IsString())):
			if len(left.String())+len(right.String()) > b.limits.MaxBytes {
				return exec.AsValue(b.sizeError())
			}
		}
		ctx := e.Environment.Context.Inherit()
		ctx.Set(opLeft, left)
		ctx.Set(opRight, right)
		sub := &exec.Evaluator{Config: e.Config, Loader: e.Loader, Environment: &exec.Environment{
			Context: ctx, Filters: e.Environment.Filters, Tests: e.Environment.Tests,
			ControlStructures: e.Environment.ControlStructures, Methods: e.Environment.Methods,
		}}
		return sub.Eval(op)
	}
}

// instrument rewrites a compiled template's guarded operators into their
// filters and bounds the depth of its syntax tree (gonja evaluates
// expressions recursively).
//
// It also refuses filters and tests the environment lacks, as Jinja does
// when it compiles a template; gonja only fails when the filter runs, with
// a dump of its token.
func instrument(root *nodes.Template, env *exec.Environment, maxDepth int) error {
	// One level of the tree is a few levels of reflection (interface,
	// pointer, struct); 8 leaves slack for real templates.
	w := &rewriter{seen: map[uintptr]bool{}, done: map[nodes.Node]nodes.Expression{}, maxDepth: 8 * maxDepth, env: env}
	w.visit(reflect.ValueOf(root), 0)
	return w.err
}

type rewriter struct {
	seen     map[uintptr]bool
	done     map[nodes.Node]nodes.Expression
	maxDepth int
	env      *exec.Environment
	err      error
}

func (w *rewriter) checkNames(v reflect.Value) {
	switch n := v.Interface().(type) {
	case *nodes.FilterCall:
		if !w.env.Filters.Exists(n.Name) {
			w.err = fmt.Errorf("uses the filter %q at line %d, column %d, which the Jinja engine (gonja) does not have; fix or replace its chat_template", n.Name, n.Token.Line, n.Token.Col)
		}
	case *nodes.TestCall:
		if !w.env.Tests.Exists(n.Name) {
			w.err = fmt.Errorf("uses the test %q (\"is %s\") at line %d, column %d, which the Jinja engine (gonja) does not have; fix or replace its chat_template", n.Name, n.Name, n.Token.Line, n.Token.Col)
		}
	}
}

var (
	tokenType    = reflect.TypeFor[*tokens.Token]()
	filteredType = reflect.TypeFor[*nodes.FilteredExpression]()
)

func (w *rewriter) visit(v reflect.Value, depth int) {
	if w.err != nil {
		return
	}
	if depth > w.maxDepth {
		w.err = fmt.Errorf("is nested deeper than %d levels (expressions and blocks); fix or replace its chat_template", w.maxDepth/8)
		return
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		// Only a settable slot whose type a FilteredExpression fits
		// (nodes.Node, nodes.Expression) can take the rewrite.
		if gi, ok := v.Interface().(*nodes.GetItem); ok && v.CanSet() && filteredType.AssignableTo(v.Type()) {
			if w.rewriteGetItem(v, gi, depth) {
				return
			}
		}
		if be, ok := v.Interface().(*nodes.BinaryExpression); ok && v.CanSet() && filteredType.AssignableTo(v.Type()) {
			if name, guarded := guardedOps[be.Operator.Token.Type]; guarded {
				if done, ok := w.done[be]; ok {
					v.Set(reflect.ValueOf(done))
					return
				}
				w.visit(reflect.ValueOf(be).Elem(), depth+1)
				f := &nodes.FilteredExpression{Expression: be.Left, Filters: []*nodes.FilterCall{{
					Token: be.Operator.Token, Name: name, Args: []nodes.Expression{be.Right}, Kwargs: map[string]nodes.Expression{},
				}}}
				w.done[be] = f
				v.Set(reflect.ValueOf(f))
				return
			}
		}
		w.visit(v.Elem(), depth+1)
	case reflect.Pointer:
		if v.IsNil() || v.Type() == tokenType || w.seen[v.Pointer()] {
			return
		}
		w.seen[v.Pointer()] = true
		if w.checkNames(v); w.err != nil {
			return
		}
		w.visit(v.Elem(), depth+1)
		switch n := v.Interface().(type) {
		case *nodes.Output:
			// What an output prints is measured before gonja turns it
			// into text (see chat_values.go).
			n.Expression, n.Alternative = sized(n.Expression), sized(n.Alternative)
		case *nodes.FilteredExpression:
			// So is each filter's input, with the filter's arguments.
			var chain []*nodes.FilterCall
			for _, fc := range n.Filters {
				if fc.Name != sizeFilter && fc.Name != getItemFilter && !isGuardedOp(fc.Name) {
					chain = append(chain, &nodes.FilterCall{Token: fc.Token, Name: sizeFilter, Args: fc.Args, Kwargs: fc.Kwargs})
				}
				chain = append(chain, fc)
			}
			n.Filters = chain
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if !f.CanSet() && f.CanAddr() {
				// gonja keeps the expressions of {% set %}, {% with %} and
				// {% filter %} in unexported fields; an unguarded ~ in a
				// {% set %} is the doubling bomb. The types are gonja's,
				// pinned by go.mod, and reflect still checks every Set.
				f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
			}
			if f.CanSet() {
				w.visit(f, depth)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			w.visit(v.Index(i), depth)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			slot := reflect.New(v.Type().Elem()).Elem()
			slot.Set(iter.Value())
			w.visit(slot, depth)
			v.SetMapIndex(iter.Key(), slot)
		}
	}
}

// checkNesting bounds the nesting of brackets and blocks in a template's
// source before gonja's recursive parser sees it.
func checkNesting(src string, cfg *config.Config, maxDepth int) error {
	stream := tokens.LexAll(src, cfg)
	brackets, blocks := 0, 0
	afterBlockBegin := false
	for ; ; stream.Next() {
		tok := stream.Current()
		if tok == nil || tok.Type == tokens.EOF || tok.Type == tokens.Error {
			break
		}
		switch tok.Type {
		case tokens.LeftParenthesis, tokens.LeftBracket, tokens.LeftBrace:
			brackets++
		case tokens.RightParenthesis, tokens.RightBracket, tokens.RightBrace:
			brackets--
		case tokens.Name:
			if afterBlockBegin {
				switch {
				case strings.HasPrefix(tok.Val, "end"):
					blocks--
				case blockOpeners[tok.Val]:
					blocks++
				}
			}
		}
		afterBlockBegin = tok.Type == tokens.BlockBegin
		if brackets > maxDepth || blocks > maxDepth {
			return fmt.Errorf("is nested deeper than %d levels (brackets or blocks) at line %d; fix or replace its chat_template", maxDepth, tok.Line)
		}
	}
	return nil
}

var blockOpeners = map[string]bool{"for": true, "if": true, "macro": true, "call": true, "filter": true, "with": true, "autoescape": true, "trans": true}
