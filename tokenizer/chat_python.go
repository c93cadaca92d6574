package tokenizer

import (
	"errors"
	"fmt"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// Chat templates are written for Jinja2, where values are Python objects.
// gonja's filters follow Go instead in two places that chat templates
// reach, so those two are replaced:
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
