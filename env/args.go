package env

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
)

// ArgType is the type of an environment argument as a config file writes it.
type ArgType string

const (
	ArgInt    ArgType = "int"
	ArgFloat  ArgType = "float"
	ArgBool   ArgType = "bool"
	ArgString ArgType = "string"
	ArgList   ArgType = "list"
)

// ArgSpec declares one argument an environment accepts in a config's
// `args = {…}`: its name, type, default and a one-line help.
type ArgSpec struct {
	Name    string
	Type    ArgType
	Default any
	Help    string
}

// Args are validated arguments: every declared argument is present, with
// its default when the config did not give it, normalised to int, float64,
// bool, string or []any. The accessors return the zero value for a name
// that was not declared, which only a bug in an environment can ask for.
type Args map[string]any

func (a Args) Int(name string) int       { v, _ := a[name].(int); return v }
func (a Args) Float(name string) float64 { v, _ := a[name].(float64); return v }
func (a Args) Bool(name string) bool     { v, _ := a[name].(bool); return v }
func (a Args) String(name string) string { v, _ := a[name].(string); return v }
func (a Args) List(name string) []any    { v, _ := a[name].([]any); return v }
func (a Args) Strings(name string) []string {
	var out []string
	for _, v := range a.List(name) {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

// validateArgs checks given against specs and fills in defaults. An unknown
// name is an error listing the valid arguments (with a did-you-mean for a
// near miss); a value of the wrong type is an error naming the argument, the
// expected type and what was given. Numbers are accepted the way TOML and
// JSON write them: an integer for a float argument is fine, and a float
// with no fractional part (JSON has only floats) is fine for an int one.
func validateArgs(id string, specs []ArgSpec, given map[string]any) (Args, error) {
	out := Args{}
	byName := map[string]ArgSpec{}
	for _, s := range specs {
		byName[s.Name] = s
		v, err := normalizeArg(s.Type, s.Default)
		if err != nil {
			return nil, fmt.Errorf("env %s: default of arg %q: %v (a bug in the environment)", id, s.Name, err)
		}
		out[s.Name] = v
	}
	names := make([]string, 0, len(given))
	for k := range given {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		s, ok := byName[k]
		if !ok {
			return nil, unknownArgError(id, k, specs)
		}
		v, err := normalizeArg(s.Type, given[k])
		if err != nil {
			return nil, fmt.Errorf("env %s: arg %q must be %s, got %s; e.g. %s = %s",
				id, k, s.Type, describeValue(given[k]), k, FormatValue(s.Default))
		}
		out[k] = v
	}
	return out, nil
}

func unknownArgError(id, name string, specs []ArgSpec) error {
	var b strings.Builder
	fmt.Fprintf(&b, "env %s: unknown arg %q", id, name)
	if near := nearest(name, specs); near != "" {
		fmt.Fprintf(&b, "; did you mean %q?", near)
	}
	if len(specs) == 0 {
		b.WriteString("; this environment takes no args")
		return fmt.Errorf("%s", b.String())
	}
	b.WriteString("; valid args: ")
	for i, s := range specs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s, default %s)", s.Name, s.Type, FormatValue(s.Default))
	}
	return fmt.Errorf("%s", b.String())
}

// nearest returns the declared name closest to name when it is a plausible
// typo: at most a third of its letters differ.
func nearest(name string, specs []ArgSpec) string {
	best, bestD := "", math.MaxInt
	for _, s := range specs {
		if d := editDistance(strings.ToLower(name), strings.ToLower(s.Name)); d < bestD {
			best, bestD = s.Name, d
		}
	}
	if best == "" || bestD > max(1, len(name)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// normalizeArg converts v to the Go type Args holds for t.
func normalizeArg(t ArgType, v any) (any, error) {
	v = plainNumber(v)
	rv := reflect.ValueOf(v)
	switch t {
	case ArgInt:
		switch rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return int(rv.Int()), nil
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if rv.Uint() <= math.MaxInt64 {
				return int(rv.Uint()), nil
			}
		case reflect.Float32, reflect.Float64:
			if f := rv.Float(); f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				return int(f), nil
			}
		}
	case ArgFloat:
		switch rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return float64(rv.Int()), nil
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return float64(rv.Uint()), nil
		case reflect.Float32, reflect.Float64:
			return rv.Float(), nil
		}
	case ArgBool:
		if rv.Kind() == reflect.Bool {
			return rv.Bool(), nil
		}
	case ArgString:
		if rv.Kind() == reflect.String {
			return rv.String(), nil
		}
	case ArgList:
		if !rv.IsValid() {
			return []any{}, nil
		}
		if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
			out := make([]any, rv.Len())
			for i := range out {
				out[i] = plainNumber(rv.Index(i).Interface())
			}
			return out, nil
		}
	default:
		return nil, fmt.Errorf("unknown arg type %q; use int, float, bool, string or list", t)
	}
	return nil, fmt.Errorf("not a %s", t)
}

// plainNumber turns a json.Number (a row decoded with UseNumber, as
// grpo env score reads its input) into the int64 or float64 a TOML file
// would give: json.Number is a string underneath, and would otherwise be
// refused as an int and taken as a string.
func plainNumber(v any) any {
	n, ok := v.(json.Number)
	if !ok {
		return v
	}
	if i, err := n.Int64(); err == nil {
		return i
	}
	if f, err := n.Float64(); err == nil {
		return f
	}
	return v
}

// describeValue names what a config gave, for error messages.
func describeValue(v any) string {
	v = plainNumber(v)
	if v == nil {
		return "nothing"
	}
	kind := reflect.ValueOf(v).Kind()
	name := kind.String()
	switch kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		name = "int"
	case reflect.Float32, reflect.Float64:
		name = "float"
	case reflect.Slice, reflect.Array:
		name = "list"
	case reflect.Map:
		name = "table"
	}
	return name + " " + FormatValue(v)
}

// FormatValue writes v the way a TOML config would.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return `""`
	case string:
		if len(x) > 60 {
			x = x[:57] + "..."
		}
		return fmt.Sprintf("%q", x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = FormatValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []string:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = FormatValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return fmt.Sprintf("%.1f", x)
		}
		return fmt.Sprint(x)
	}
	return fmt.Sprint(v)
}
