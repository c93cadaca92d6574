package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/tokens"

	"github.com/grpo-dev/grpo/chat"
)

// ChatOptions are the template variables besides messages.
type ChatOptions struct {
	AddGenerationPrompt bool
	// EnableThinking is Qwen3's switch; nil leaves it undefined (thinking on).
	EnableThinking *bool
	// Tools are JSON tool schemas, rendered by the template's tojson in the
	// key order given here, as Python's json.dumps would.
	Tools []json.RawMessage
	// ReasoningEffort is the reasoning_effort variable gpt-oss's template
	// reads ("low", "medium", "high"); "" leaves it undefined (the
	// template's default).
	ReasoningEffort string
	// Now is the time strftime_now formats (zero: the current local time,
	// as transformers' datetime.now()).
	Now time.Time
	// Vars are further template variables.
	Vars map[string]any
	// Limits bound the render (zero fields: DefaultChatLimits).
	Limits ChatLimits
}

// ChatTemplate returns the Jinja chat template from tokenizer_config.json
// ("" if it has none).
func (t *Tokenizer) ChatTemplate() string { return t.cfg.chatTemplate }

// TemplateReads reports whether the chat template names the variable
// name at all: a template that never does ignores whatever it is set to.
func (t *Tokenizer) TemplateReads(name string) bool {
	return strings.Contains(t.cfg.chatTemplate, name)
}

// ReasoningEffortWarning is chat.ReasoningEffortUnread for a
// reasoning_effort set under key when this model's template does not read
// it, "" otherwise (unset, or read).
func (t *Tokenizer) ReasoningEffortWarning(key, value string) string {
	if value == "" || t.TemplateReads(chat.ReasoningEffortVar) {
		return ""
	}
	return chat.ReasoningEffortUnread(key, value)
}

// ApplyChatTemplate renders messages with the model's chat template, as
// transformers' apply_chat_template(tokenize=False) does. Encode the result
// with Encode (the template already holds any BOS).
func (t *Tokenizer) ApplyChatTemplate(messages []chat.Message, opts ChatOptions) (string, error) {
	if t.cfg.chatTemplate == "" && len(t.cfg.templates) > 0 {
		names := make([]string, 0, len(t.cfg.templates))
		for n := range t.cfg.templates {
			names = append(names, strconv.Quote(n))
		}
		sort.Strings(names)
		file := t.cfg.templateSource
		if file == "" {
			file = "tokenizer_config.json"
		}
		return "", fmt.Errorf("%s: the chat_template list has no \"default\" entry (it has %s), and transformers renders only that one; name one of them \"default\"", file, strings.Join(names, ", "))
	}
	if t.cfg.chatTemplate == "" {
		return "", errors.New("tokenizer_config.json has no chat_template; this model has no chat format (use plain text, or a model's -Instruct/chat variant)")
	}
	source := "the chat template"
	if t.cfg.templateSource != "" {
		source += " in " + t.cfg.templateSource
	}
	return renderChatTemplate(source, t.cfg.chatTemplate, messages, opts, map[string]any{
		"bos_token": t.cfg.bosToken,
		"eos_token": t.cfg.eosToken,
	})
}

// RenderChatTemplate renders a Jinja chat template with the given special
// token variables (bos_token, eos_token…), under opts.Limits.
func RenderChatTemplate(template string, messages []chat.Message, opts ChatOptions, tokens map[string]any) (string, error) {
	return renderChatTemplate("the chat template", template, messages, opts, tokens)
}

// renderChatTemplate renders under a budget; source names the template in
// errors.
func renderChatTemplate(source, template string, messages []chat.Message, opts ChatOptions, tokens map[string]any) (out string, err error) {
	// gonja panics on some inputs (strings.Repeat with a huge count, type
	// assertions on odd values); a panic is recoverable, unlike the stack
	// overflow the budget exists to prevent.
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("%s failed inside the Jinja engine (gonja): %v; fix or replace its chat_template", source, p)
		}
	}()
	limits := opts.Limits.withDefaults()
	tpl, err := compileTemplate(template, limits.MaxDepth)
	if err != nil {
		return "", fmt.Errorf("%s %v", source, err)
	}
	orders := &keyOrders{m: map[uintptr][]string{}}
	vars := map[string]any{}
	for k, v := range tokens {
		vars[k] = v
	}
	msgs := make([]any, len(messages))
	for i, m := range messages {
		if msgs[i], err = messageValue(m, orders); err != nil {
			return "", fmt.Errorf("messages[%d].%v", i, err)
		}
	}
	vars["messages"] = msgs
	vars["add_generation_prompt"] = opts.AddGenerationPrompt
	if opts.EnableThinking != nil {
		vars["enable_thinking"] = *opts.EnableThinking
	}
	if opts.ReasoningEffort != "" {
		vars["reasoning_effort"] = opts.ReasoningEffort
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	vars["strftime_now"] = strftimeNow(now)
	if len(opts.Tools) > 0 {
		tools := make([]any, len(opts.Tools))
		for i, raw := range opts.Tools {
			if tools[i], err = orders.decode(raw); err != nil {
				return "", fmt.Errorf("tools[%d]: %v", i, err)
			}
		}
		vars["tools"] = tools
	}
	for k, v := range opts.Vars {
		vars[k] = v
	}
	defer orders.release()
	budget := newBudget(source, limits)
	vars[budgetKey] = budget
	w := &boundedWriter{b: budget}
	err = tpl.Execute(w, exec.NewContext(vars))
	if budget.err != nil {
		// The bound is the cause, whatever gonja made of it.
		return "", budget.err
	}
	if err != nil {
		return "", fmt.Errorf("%s: %v", source, renderError(err))
	}
	return w.out.String(), nil
}

// tokenDump is how gonja prints a filter call in its error chain:
// &{<Token[Name] Val='tojson' Pos=14 Line=1 Col=15> tojson [] map[]}.
var tokenDump = regexp.MustCompile(`&\{<Token\[[^\]]*\] Val='([^']*)' Pos=\d+ Line=(\d+) Col=(\d+)>[^}]*\}`)

// renderError is gonja's error chain on one line, without its token dumps
// and the "unable to execute template" prefix every error has.
func renderError(err error) string {
	s := firstLine(err)
	s = strings.TrimPrefix(s, "unable to execute template: ")
	return tokenDump.ReplaceAllString(s, "'$1' (line $2, column $3)")
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func messageValue(m chat.Message, orders *keyOrders) (map[string]any, error) {
	v := map[string]any{"role": m.Role, "content": m.Content}
	if m.ReasoningContent != nil {
		// Qwen's templates read reasoning_content, gpt-oss's thinking.
		v["reasoning_content"] = *m.ReasoningContent
		v["thinking"] = *m.ReasoningContent
	}
	if m.Name != "" {
		v["name"] = m.Name
	}
	if m.ToolCallID != "" {
		v["tool_call_id"] = m.ToolCallID
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]any, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			args, err := orders.decode(c.Function.Arguments)
			if err != nil {
				return nil, fmt.Errorf("tool_calls[%d].function.arguments: %v", i, err)
			}
			fn := map[string]any{"name": c.Function.Name, "arguments": args}
			call := map[string]any{"function": fn}
			if c.Type != "" {
				call["type"] = c.Type
			}
			calls[i] = call
		}
		v["tool_calls"] = calls
	}
	return v, nil
}

// Compiled templates are cached: a trainer renders thousands of prompts
// with the same template.
var templateCache sync.Map // string → *exec.Template

// chatEnvironment is gonja's standard library with transformers'
// additions: tojson in Python's json.dumps style, raise_exception.
var chatEnvironment = func() *exec.Environment {
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	if err := filters.Replace("tojson", filterToJSON); err != nil {
		panic(err)
	}
	for name, fn := range pythonFilters {
		if err := filters.Replace(name, fn); err != nil {
			panic(err)
		}
	}
	if err := filters.Register(getItemFilter, filterGetItem); err != nil {
		panic(err)
	}
	if err := filters.Register(sizeFilter, filterSize); err != nil {
		panic(err)
	}
	if err := filters.Register(ifElseFilter, filterIfElse); err != nil {
		panic(err)
	}
	for typ, name := range guardedOps {
		val := map[tokens.Type]string{tokens.Addition: "+", tokens.Multiply: "*", tokens.Tilde: "~"}[typ]
		if err := filters.Register(name, opFilter(typ, val)); err != nil {
			panic(err)
		}
	}
	ctx := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
	ctx.Set("raise_exception", func(msg string) (string, error) {
		return "", fmt.Errorf("the template raised an exception: %s", msg)
	})
	ctx.Set("range", rangeFunction)
	return &exec.Environment{
		Context:           ctx,
		Filters:           filters,
		Tests:             builtins.Tests,
		ControlStructures: guardedStructures(),
		Methods:           chatMethods,
	}
}()

// compileTemplate parses and instruments a template (see chat_limits.go).
// Errors read after "the chat template …".
func compileTemplate(src string, maxDepth int) (*exec.Template, error) {
	key := templateKey{src, maxDepth}
	if tpl, ok := templateCache.Load(key); ok {
		return tpl.(*exec.Template), nil
	}
	if len(src) > maxTemplateBytes {
		return nil, fmt.Errorf("is %d bytes, more than %s: no chat format needs that; the file is damaged or holds something else", len(src), mib(maxTemplateBytes))
	}
	// transformers renders with trim_blocks and lstrip_blocks on.
	cfg := config.New()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = true
	if err := checkNesting(src, cfg, maxDepth); err != nil {
		return nil, err
	}
	src = rewriteInlineIfs(src, cfg)
	// No sub-loader: the template is the only one there is.
	loader, err := loaders.NewShiftedLoader("chat_template", strings.NewReader(src), noLoader{})
	if err != nil {
		return nil, fmt.Errorf("could not be read: %v", firstLine(err))
	}
	tpl, err := exec.NewTemplate("chat_template", cfg, loader, chatEnvironment)
	if err != nil {
		// gonja's error quotes the whole source before the parser's
		// message ("failed to parse template '…': %w"); keep the message.
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return nil, fmt.Errorf("uses something the Jinja engine (gonja) does not support: %v", firstLine(err))
	}
	if err := instrument(tpl.Root(), chatEnvironment, maxDepth); err != nil {
		return nil, err
	}
	// A process renders one or a few templates; a bound keeps anything
	// that compiles many (a fuzzer, a server trying templates) from
	// holding them all.
	if templateCount.Add(1) > maxCachedTemplates {
		templateCache.Clear()
		templateCount.Store(1)
	}
	templateCache.Store(key, tpl)
	return tpl, nil
}

const maxCachedTemplates = 64

var templateCount atomic.Int64

type templateKey struct {
	src      string
	maxDepth int
}

// noLoader resolves nothing: chat templates stand alone.
type noLoader struct{}

func (noLoader) Read(id string) (io.Reader, error) { return nil, fmt.Errorf("no template %q", id) }
func (noLoader) Resolve(id string) (string, error) { return "", fmt.Errorf("no template %q", id) }
func (noLoader) Inherit(string) (loaders.Loader, error) {
	return nil, errors.New("chat templates cannot load other templates")
}

// keyOrders remembers the key order of JSON objects handed to a template
// (Go maps have none) so tojson writes them back as given. gonja's filters
// see no render context, so the orders live in liveOrders, keyed by map
// identity, for as long as the render that owns the maps runs.
type keyOrders struct {
	mu sync.Mutex
	m  map[uintptr][]string
}

var liveOrders sync.Map // uintptr → []string

func (o *keyOrders) release() {
	for p := range o.m {
		liveOrders.Delete(p)
	}
}

// decode turns JSON into template values: objects become maps whose key
// order is recorded.
func (o *keyOrders) decode(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := o.value(dec)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	return v, nil
}

func (o *keyOrders) value(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '[' {
			list := []any{}
			for dec.More() {
				v, err := o.value(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		}
		obj := map[string]any{}
		var keys []string
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := o.value(dec)
			if err != nil {
				return nil, err
			}
			key := k.(string)
			if _, dup := obj[key]; !dup {
				keys = append(keys, key)
			}
			obj[key] = v
		}
		p := reflect.ValueOf(obj).Pointer()
		o.mu.Lock()
		o.m[p] = keys
		o.mu.Unlock()
		liveOrders.Store(p, keys)
		_, err := dec.Token()
		return obj, err
	case json.Number:
		if i, err := tok.Int64(); err == nil {
			return int(i), nil
		}
		f, err := tok.Float64()
		return f, err
	}
	return tok, nil // string, bool, nil
}

// orderedKeys returns m's keys in the order its JSON gave them, or sorted
// for maps that did not come from JSON.
func orderedKeys(m map[string]any) []string {
	if v, ok := liveOrders.Load(reflect.ValueOf(m).Pointer()); ok {
		if keys := v.([]string); len(keys) == len(m) {
			return keys
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// filterToJSON is transformers' tojson: json.dumps(x, ensure_ascii=False,
// indent=indent), so ", " and ": " separators and non-ASCII kept.
func filterToJSON(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	indent := -1
	if v, ok := params.KwArgs["indent"]; ok && !v.IsNil() {
		if !v.IsInteger() {
			return exec.AsValue(fmt.Errorf("tojson: indent must be an integer, got %s", v.String()))
		}
		indent = v.Integer()
	}
	var buf strings.Builder
	if err := writePyJSON(&buf, in.Interface(), indent, 0); err != nil {
		return exec.AsValue(fmt.Errorf("tojson: %v", err))
	}
	return exec.AsSafeValue(buf.String())
}

func writePyJSON(b *strings.Builder, v any, indent, depth int) error {
	newline := func(d int) {
		if indent >= 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(" ", indent*d))
		}
	}
	itemSep := ", "
	if indent >= 0 {
		itemSep = ","
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		writePyString(b, x)
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(pyFloat(x))
	case *exec.Value:
		return writePyJSON(b, x.Interface(), indent, depth)
	case exec.ValuesList:
		// A list literal in the template.
		list := make([]any, len(x))
		for i, e := range x {
			list[i] = e
		}
		return writePyJSON(b, list, indent, depth)
	case *exec.Dict:
		// A dict literal in the template: its pairs, in their order.
		if len(x.Pairs) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		for i, p := range x.Pairs {
			if i > 0 {
				b.WriteString(itemSep)
			}
			newline(depth + 1)
			writePyString(b, p.Key.String())
			b.WriteString(": ")
			if err := writePyJSON(b, p.Value, indent, depth+1); err != nil {
				return err
			}
		}
		newline(depth)
		b.WriteByte('}')
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(itemSep)
			}
			newline(depth + 1)
			if err := writePyJSON(b, e, indent, depth+1); err != nil {
				return err
			}
		}
		newline(depth)
		b.WriteByte(']')
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		for i, k := range orderedKeys(x) {
			if i > 0 {
				b.WriteString(itemSep)
			}
			newline(depth + 1)
			writePyString(b, k)
			b.WriteString(": ")
			if err := writePyJSON(b, x[k], indent, depth+1); err != nil {
				return err
			}
		}
		newline(depth)
		b.WriteByte('}')
	default:
		// Other Go values (structs from Vars): via encoding/json, re-read
		// so the output still has Python's separators.
		raw, err := json.Marshal(x)
		if err != nil {
			return err
		}
		var val any
		if err := json.Unmarshal(raw, &val); err != nil {
			return err
		}
		return writePyJSON(b, val, indent, depth)
	}
	return nil
}

// writePyString quotes s as Python's json.dumps(ensure_ascii=False) does.
func writePyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+w])
		}
		i += w
	}
	b.WriteByte('"')
}

// pyFloat formats like Python's float repr: shortest round-trip digits,
// always with a decimal point, exponent form outside [1e-4, 1e16).
func pyFloat(f float64) string {
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
