package tokenizer

import (
	"fmt"
	"reflect"

	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
)

// Values a template builds can hold themselves ({% set ns.n = ns %},
// d.update({"d": d})) or share parts so their text doubles with every
// step ({% set ns.l = [ns.l, ns.l] %}). gonja turns a value into text
// recursively and all at once, so a cycle overflows the stack (fatal) and
// a shared structure allocates without end. Before gonja stringifies a
// value (an output, a filter's input, a guarded operator's operands), its
// text size is measured by a walk that stops at MaxBytes and at MaxDepth
// levels, so both end in a clear error instead.

// sizeFilter is the filter the instrumentation puts in front of every
// output and every filter call: it checks its input and, for a filter
// call, the call's arguments, then passes the input on unchanged.
const sizeFilter = "\x00size"

func filterSize(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	b := budgetOf(e.Environment.Context)
	if b == nil {
		return exec.AsValue(fmt.Errorf("chat template value outside a render"))
	}
	if err := b.measure(in); err != nil {
		return exec.AsValue(err)
	}
	for _, a := range params.Args {
		if err := b.measureArg(a); err != nil {
			return exec.AsValue(err)
		}
	}
	for _, a := range params.KwArgs {
		if err := b.measureArg(a); err != nil {
			return exec.AsValue(err)
		}
	}
	return in
}

// measureArg also refuses a number past the size bound: filters such as
// center, indent and wordwrap allocate as many bytes as their width.
func (b *renderBudget) measureArg(v *exec.Value) error {
	if v.IsInteger() && (v.Integer() > b.limits.MaxBytes || v.Integer() < -b.limits.MaxBytes) {
		return b.fail("passes %d to a filter, more than its %s size bound; fix or replace its chat_template", v.Integer(), mib(b.limits.MaxBytes))
	}
	return b.measure(v)
}

// measure returns an error when v's text would exceed MaxBytes or v nests
// deeper than MaxDepth (a value that contains itself nests without end).
func (b *renderBudget) measure(v *exec.Value) error {
	if v == nil {
		return nil
	}
	size := 0
	if !b.walk(v.Val, 0, &size) {
		return b.err
	}
	return nil
}

var (
	valuePtrType  = reflect.TypeFor[*exec.Value]()
	reflectValTyp = reflect.TypeFor[reflect.Value]()
)

func (b *renderBudget) walk(v reflect.Value, depth int, size *int) bool {
	if b.err != nil {
		return false
	}
	if depth > b.limits.MaxDepth {
		b.fail("holds a value nested deeper than %d levels (a list or namespace that contains itself?); fix or replace its chat_template", b.limits.MaxDepth)
		return false
	}
	*size += 2 // separators and brackets, roughly
	if *size > b.limits.MaxBytes {
		b.sizeError()
		return false
	}
	if !v.IsValid() {
		return true
	}
	switch v.Type() {
	case valuePtrType:
		if v.IsNil() {
			return true
		}
		return b.walk(v.Interface().(*exec.Value).Val, depth, size)
	case reflectValTyp:
		return b.walk(v.Interface().(reflect.Value), depth, size)
	}
	switch v.Kind() {
	case reflect.String:
		*size += v.Len()
		if *size > b.limits.MaxBytes {
			b.sizeError()
			return false
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if !b.walk(v.Index(i), depth+1, size) {
				return false
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if !b.walk(it.Key(), depth+1, size) || !b.walk(it.Value(), depth+1, size) {
				return false
			}
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return b.walk(v.Elem(), depth+1, size)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() && !b.walk(v.Field(i), depth+1, size) {
				return false
			}
		}
	default:
		*size += 8 // numbers, booleans
	}
	return true
}

// sized wraps e so its value is measured before gonja uses it.
func sized(e nodes.Expression) nodes.Expression {
	if e == nil {
		return nil
	}
	return &nodes.FilteredExpression{Expression: e, Filters: []*nodes.FilterCall{{Token: e.Position(), Name: sizeFilter, Kwargs: map[string]nodes.Expression{}}}}
}
