package trainer

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The schema is the Config struct tree read through its toml tags; the
// error messages, the did-you-mean and docs/config.md all derive from it.

var configType = reflect.TypeOf(Config{})

// tomlFields lists a struct's keys with their types, flattening embedded
// structs the way go-toml does.
func tomlFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("toml")
		if f.Anonymous && tag == "" {
			out = append(out, tomlFields(f.Type)...)
			continue
		}
		if !f.IsExported() || tag == "-" || tag == "" {
			continue
		}
		f.Name = strings.Split(tag, ",")[0]
		out = append(out, f)
	}
	return out
}

// schemaType is the Go type a key path decodes into, or nil for a path
// outside the schema. Array indices in the path are skipped.
func schemaType(path []string) reflect.Type {
	t := configType
	for _, part := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Slice, reflect.Array:
			if _, err := strconv.Atoi(part); err == nil {
				t = t.Elem()
				continue
			}
			t = t.Elem()
			if t.Kind() != reflect.Struct {
				return nil
			}
			fallthrough
		case reflect.Struct:
			var next reflect.Type
			for _, f := range tomlFields(t) {
				if f.Name == part {
					next = f.Type
				}
			}
			if next == nil {
				return nil
			}
			t = next
		case reflect.Map, reflect.Interface:
			return reflect.TypeOf((*any)(nil)).Elem()
		default:
			return nil
		}
	}
	return t
}

// tableKeys lists the keys valid in the table at path.
func tableKeys(path []string) []string {
	t := schemaType(path)
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for _, f := range tomlFields(t) {
		keys = append(keys, f.Name)
	}
	return keys
}

// allKeyPaths lists every key of the schema as a dotted path, "*" standing
// for an array index: "env.*.args".
func allKeyPaths() []string {
	var out []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for _, f := range tomlFields(t) {
			p := f.Name
			if prefix != "" {
				p = prefix + "." + f.Name
			}
			out = append(out, p)
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Struct:
				walk(p, ft)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(p+".*", ft.Elem())
			}
		}
	}
	walk("", configType)
	return out
}

// foreignTables are tables of prime-rl's and verifiers' own config layouts,
// which users may paste by mistake.
var foreignTables = map[string]bool{"trainer": true, "orchestrator": true, "inference": true, "deployment": true, "ckpt": true}

// unknownKeyMsg explains an unknown key: a near miss in the same table, the
// same key in another table, or the list of valid keys.
func unknownKeyMsg(key []string) string {
	path := indexedPath(key)
	name := key[len(key)-1]
	parent := key[:len(key)-1]
	where := "at the top level"
	if len(parent) > 0 {
		where = "in [" + strings.Join(stripIndices(parent), ".") + "]"
	}
	msg := fmt.Sprintf("key %q: unknown key %s", displayKey(path), where)
	if len(parent) == 0 && foreignTables[name] {
		return msg + fmt.Sprintf("; [%s] belongs to prime-rl's own config layout, grpo reads Lab's (see docs/config.md)", name)
	}
	valid := tableKeys(parent)
	if s := closest(name, valid); s != "" {
		return msg + fmt.Sprintf("; did you mean %q?", s)
	}
	if other := elsewhere(name, stripIndices(parent)); other != "" {
		return msg + fmt.Sprintf("; did you mean %s? (move it there)", other)
	}
	if len(valid) <= 12 {
		return msg + "; valid keys: " + strings.Join(valid, ", ")
	}
	return msg + "; see docs/config.md for the valid keys"
}

// elsewhere finds name as a key of another table, e.g. top-level
// temperature → "[sampling] temperature".
func elsewhere(name string, parent []string) string {
	here := strings.Join(parent, ".")
	var hits []string
	for _, p := range allKeyPaths() {
		i := strings.LastIndex(p, ".")
		table, key := "", p
		if i >= 0 {
			table, key = p[:i], p[i+1:]
		}
		if key != name || table == here {
			continue
		}
		if table == "" {
			hits = append(hits, "top-level "+key)
		} else {
			hits = append(hits, "["+strings.ReplaceAll(table, ".*", "")+"] "+key)
		}
	}
	if len(hits) == 0 {
		return ""
	}
	sort.Strings(hits)
	return strings.Join(hits, " or ")
}

// closest returns the valid key nearest to name by Damerau–Levenshtein
// distance, if it is near enough to be a typo.
func closest(name string, valid []string) string {
	best, bestD := "", 1<<30
	for _, v := range valid {
		if d := editDistance(strings.ToLower(name), v); d < bestD {
			best, bestD = v, d
		}
	}
	limit := 2
	if len(name) >= 10 {
		limit = 3
	}
	if bestD <= limit && bestD < len(name) {
		return best
	}
	// Also catch a key written with dashes or in camelCase.
	norm := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	for _, v := range valid {
		if strings.ReplaceAll(v, "_", "") == strings.ReplaceAll(norm, "_", "") {
			return v
		}
	}
	return ""
}

// editDistance is the optimal-string-alignment Damerau–Levenshtein
// distance: insertions, deletions, substitutions and adjacent
// transpositions each cost 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

var gotKind = regexp.MustCompile(`cannot (?:decode TOML|store a) (\w+(?: \w+)?) (?:into|in a)`)

// typeErrorMsg rewrites go-toml's decode errors ("cannot decode TOML
// string into struct field trainer.Config.BatchSize of type int") in the
// config's terms.
func typeErrorMsg(key []string, msg string, raw map[string]any) string {
	if len(key) == 0 {
		return msg + "; fix the TOML syntax"
	}
	path := indexedPath(key)
	dk := displayKey(path)
	m := gotKind.FindStringSubmatch(msg)
	if m == nil {
		if len(key) == 1 && key[0] == "loss" && strings.Contains(msg, "should be a table") {
			return `key "loss": loss = "rl" and a [loss] table cannot both be written; remove loss = "rl" (RL is the only mode grpo runs)`
		}
		if strings.Contains(msg, "already defined") {
			return fmt.Sprintf("key %q: %s; keep only one of them", dk, msg)
		}
		return fmt.Sprintf("key %q: %s", dk, msg)
	}
	got := m[1]
	p := strings.Join(stripIndices(key), ".")
	if (p == "env" || p == "eval.env") && strings.Contains(got, "table") {
		return singleBracketMsg(p)
	}
	t := schemaType(key)
	if t == nil {
		return fmt.Sprintf("key %q: %s", dk, msg)
	}
	want := kindName(t)
	fix := fmt.Sprintf("write %s", want)
	if ex := exampleValue(key, t); ex != "" {
		fix += ", e.g. " + key[len(key)-1] + " = " + ex
	}
	if len(key) == 1 && key[0] == "model" && got == "table" {
		fix = `write model = "Qwen/Qwen3-0.6B" at the top level ([model] tables are prime-rl's layout)`
	}
	return fmt.Sprintf("key %q: want %s, got a TOML %s; %s", dk, want, got, fix)
}

func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Array:
		return fmt.Sprintf("an array of %d %s", t.Len(), strings.TrimPrefix(strings.TrimPrefix(kindName(t.Elem()), "an "), "a ")+"s")
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct || t.Elem().Kind() == reflect.Map {
			return "an array of tables"
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "a table"
	}
	return "a value"
}

// exampleValue is the default at path if it has one worth showing, else a
// generic example of t.
func exampleValue(key []string, t reflect.Type) string {
	if v, ok := defaultAt(stripIndices(key)); ok && !v.IsZero() {
		return tomlValue(v)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "1"
	case reflect.Float64:
		return "0.5"
	case reflect.String:
		return `"..."`
	case reflect.Bool:
		return "true"
	}
	return ""
}

// defaultAt is DefaultConfig's value at a (non-indexed) path.
func defaultAt(path []string) (reflect.Value, bool) {
	v := reflect.ValueOf(DefaultConfig())
	for _, part := range path {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		found := false
		for i, f := range flatFields(v) {
			if f == part {
				v, found = flatValue(v, i), true
				break
			}
		}
		if !found {
			return reflect.Value{}, false
		}
	}
	return v, true
}

// flatFields and flatValue index a struct value's keys as tomlFields does.
func flatFields(v reflect.Value) []string {
	var names []string
	for _, f := range tomlFields(v.Type()) {
		names = append(names, f.Name)
	}
	return names
}

func flatValue(v reflect.Value, i int) reflect.Value {
	var vals []reflect.Value
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		t := v.Type()
		for j := 0; j < t.NumField(); j++ {
			f := t.Field(j)
			tag := f.Tag.Get("toml")
			if f.Anonymous && tag == "" {
				walk(v.Field(j))
				continue
			}
			if !f.IsExported() || tag == "-" || tag == "" {
				continue
			}
			vals = append(vals, v.Field(j))
		}
	}
	walk(v)
	return vals[i]
}

// tomlValue writes a default the way a config file would.
func tomlValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "unset"
		}
		return tomlValue(v.Elem())
	case reflect.String:
		return strconv.Quote(v.String())
	case reflect.Float64, reflect.Float32:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Len() == 0 {
			return "[]"
		}
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = tomlValue(v.Index(i))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.Map:
		if v.Len() == 0 {
			return "{}"
		}
	}
	return fmt.Sprint(v.Interface())
}

// indexedPath joins a go-toml key (which carries no array indices) into a
// dotted path; go-toml reports keys of [[env]] blocks without saying
// which block, so the message relies on the line number for that.
func indexedPath(key []string) string { return strings.Join(key, ".") }

func stripIndices(key []string) []string {
	var out []string
	for _, k := range key {
		if _, err := strconv.Atoi(k); err == nil {
			continue
		}
		out = append(out, k)
	}
	return out
}
