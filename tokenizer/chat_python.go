package tokenizer

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
)

// Chat templates are written for Jinja2, where values are Python objects.
// gonja follows Go instead in three places that chat templates reach, so
// those three are replaced (the third, x[i], below):
//
//   - items: a Python dict keeps the order its keys were written in, and
//     Qwen3.5's template writes a call's parameters with
//     `for name, value in arguments|items`; gonja iterates a Go map in
//     sorted order, which would reorder every call the model is shown;
//   - string: str(None) is "None" (Qwen3.5 writes a null argument as
//     `args_value | string`), where gonja prints nil as "".
var pythonFilters = map[string]exec.FilterFunction{
	"items":  filterItemsOrdered,
	"string": filterStringPython,
}

var gonjaItems, _ = builtins.Filters.Get("items")

// filterItemsOrdered returns a JSON object's (key, value) pairs in the
// object's key order, and defers to gonja for anything else.
func filterItemsOrdered(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	m, ok := in.Interface().(map[string]any)
	if !ok {
		return gonjaItems(e, in, params)
	}
	if len(params.Args) > 0 || len(params.KwArgs) > 0 {
		return exec.AsValue(errors.New("items takes no arguments"))
	}
	pairs := make([]any, 0, len(m))
	for _, k := range orderedKeys(m) {
		// A two-element list: for a, b in ... unpacks it as a tuple.
		pairs = append(pairs, []any{k, m[k]})
	}
	return exec.AsValue(pairs)
}

// filterStringPython is str(x): None is "None"; anything else as gonja
// prints it (which already writes booleans as True/False and floats
// with Python's repr).
func filterStringPython(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if len(params.Args) > 0 || len(params.KwArgs) > 0 {
		return exec.AsValue(fmt.Errorf("string takes no arguments"))
	}
	if in.IsNil() {
		return exec.AsValue("None")
	}
	return exec.AsValue(in.String())
}

// getItemFilter is what the instrumentation turns x[i] into (chat_limits.go
// rewrites every GetItem node). gonja reads x[-n] of an n-long list or
// string as undefined (its bound check is off by one), and Qwen's templates
// take the reasoning out of a turn with content.split('<think>')[-1]: for a
// turn whose <think> came with the prompt the list has one element, and
// the template then fails calling a method on the undefined value. gonja
// also indexes strings by byte where Python indexes by code point.
const getItemFilter = "\x00item"

// filterGetItem is Jinja2's environment.getitem: integer indices on lists
// and strings as Python takes them (negative from the end, out of range
// undefined), anything else as gonja's evaluator does it (an item, else an
// attribute of that name, else undefined).
func filterGetItem(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	key := params.First()
	if key.IsError() {
		return key
	}
	if key.IsInteger() && (in.IsList() || in.IsString()) {
		i := key.Integer()
		if in.IsString() {
			r := []rune(in.String())
			if i < 0 {
				i += len(r)
			}
			if i < 0 || i >= len(r) {
				return exec.AsValue(nil)
			}
			return exec.AsValue(string(r[i]))
		}
		if i < 0 {
			i += in.Len()
		}
		if i < 0 || i >= in.Len() {
			return exec.AsValue(nil)
		}
		return in.Index(i)
	}
	var k any
	switch {
	case key.IsString():
		k = key.String()
	case key.IsInteger():
		k = key.Integer()
	default:
		return exec.AsValue(fmt.Errorf("index %s is not a string or an integer", key.String()))
	}
	item, found := in.GetItem(k)
	if !found && key.IsString() {
		item, found = in.GetAttribute(key.String())
	}
	if !found && !item.IsError() {
		return exec.AsValue(nil)
	}
	return item
}

// rewriteGetItem replaces x[i] in slot v by x|getItemFilter(i), once per
// node, after rewriting inside it. It reports false for a node it cannot
// rewrite (x[] has no index), which gonja then evaluates itself.
func (w *rewriter) rewriteGetItem(v reflect.Value, gi *nodes.GetItem, depth int) bool {
	if done, ok := w.done[gi]; ok {
		v.Set(reflect.ValueOf(done))
		return true
	}
	w.visit(reflect.ValueOf(gi).Elem(), depth+1)
	target, ok1 := gi.Node.(nodes.Expression)
	index, ok2 := gi.Arg.(nodes.Expression)
	if !ok1 || !ok2 {
		return false
	}
	f := &nodes.FilteredExpression{Expression: target, Filters: []*nodes.FilterCall{{
		Token: gi.Location, Name: getItemFilter, Args: []nodes.Expression{index}, Kwargs: map[string]nodes.Expression{},
	}}}
	w.done[gi] = f
	v.Set(reflect.ValueOf(f))
	return true
}

// chatMethods are gonja's methods with a dict's keys(), values() and
// items() in the order its JSON gave its keys, as a Python dict keeps
// them: gpt-oss's template lists a tool's parameters with
// `for name, spec in tool.parameters.properties.items()`, and gonja's
// own methods sort them.
var chatMethods = func() exec.Methods {
	m := builtins.Methods
	dict := map[string]exec.Method[map[string]any]{
		"keys":   orderedDictMethod(func(k string, _ any) any { return k }),
		"values": orderedDictMethod(func(_ string, v any) any { return v }),
		"items":  orderedDictMethod(func(k string, v any) any { return []any{k, v} }),
	}
	for _, name := range []string{"get", "pop", "setdefault", "update", "copy", "clear"} {
		if f, ok := m.Dict.Get(name); ok {
			dict[name] = f
		}
	}
	m.Dict = exec.NewMethodSet(dict)
	return m
}()

func orderedDictMethod(entry func(k string, v any) any) exec.Method[map[string]any] {
	return func(self map[string]any, selfValue *exec.Value, args *exec.VarArgs) (any, error) {
		if err := args.Take(); err != nil {
			return nil, exec.ErrInvalidCall(err)
		}
		// gonja hands self over as a copy; the key order is the
		// original map's.
		if orig, ok := selfValue.Interface().(map[string]any); ok {
			self = orig
		}
		out := make([]any, 0, len(self))
		for _, k := range orderedKeys(self) {
			out = append(out, entry(k, self[k]))
		}
		return out, nil
	}
}
