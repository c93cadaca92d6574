package config

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/internal/tomlschema"
)

// The schema is the Config struct tree read through its toml tags; the
// error messages, the did-you-mean and docs/config.md all derive from it.
var schema = tomlschema.New(DefaultConfig())

// foreignTables are tables of prime-rl's and verifiers' own config layouts,
// which users may paste by mistake.
var foreignTables = map[string]bool{"trainer": true, "orchestrator": true, "deployment": true, "ckpt": true}

// unknownKeyMsg explains an unknown key: a near miss in the same table, the
// same key in another table, or the list of valid keys.
func unknownKeyMsg(key []string) string {
	path := indexedPath(key)
	name := key[len(key)-1]
	parent := key[:len(key)-1]
	where := "at the top level"
	if len(parent) > 0 {
		where = "in [" + strings.Join(tomlschema.StripIndices(parent), ".") + "]"
	}
	msg := fmt.Sprintf("key %q: unknown key %s", tomlschema.DisplayKey(path), where)
	if len(parent) == 0 && foreignTables[name] {
		return msg + fmt.Sprintf("; [%s] belongs to prime-rl's own config layout, grpo reads Lab's (see docs/config.md)", name)
	}
	valid := schema.TableKeys(parent)
	if s := tomlschema.Closest(name, valid); s != "" {
		return msg + fmt.Sprintf("; did you mean %q?", s)
	}
	if other := elsewhere(name, tomlschema.StripIndices(parent)); other != "" {
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
	for _, p := range schema.KeyPaths() {
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

var gotKind = regexp.MustCompile(`cannot (?:decode TOML|store a) (\w+(?: \w+)?) (?:into|in a)`)

// typeErrorMsg rewrites go-toml's decode errors ("cannot decode TOML
// string into struct field config.Config.BatchSize of type int") in the
// config's terms.
func typeErrorMsg(key []string, msg string, raw map[string]any) string {
	if len(key) == 0 {
		return msg + "; fix the TOML syntax"
	}
	path := indexedPath(key)
	dk := tomlschema.DisplayKey(path)
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
	p := strings.Join(tomlschema.StripIndices(key), ".")
	if (p == "env" || p == "eval.env") && strings.Contains(got, "table") {
		return singleBracketMsg(p)
	}
	t := schema.Type(key)
	if t == nil {
		return fmt.Sprintf("key %q: %s", dk, msg)
	}
	want := tomlschema.KindName(t)
	fix := fmt.Sprintf("write %s", want)
	if ex := exampleValue(key, t); ex != "" {
		fix += ", e.g. " + key[len(key)-1] + " = " + ex
	}
	if len(key) == 1 && key[0] == "model" && got == "table" {
		fix = `write model = "Qwen/Qwen3-0.6B" at the top level ([model] tables are prime-rl's layout)`
	}
	return fmt.Sprintf("key %q: want %s, got a TOML %s; %s", dk, want, got, fix)
}

// exampleValue is the default at path if it has one worth showing, else a
// generic example of t.
func exampleValue(key []string, t reflect.Type) string {
	if v, ok := schema.Default(tomlschema.StripIndices(key)); ok && !v.IsZero() {
		return tomlschema.FormatValue(v)
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

// indexedPath joins a go-toml key (which carries no array indices) into a
// dotted path; go-toml reports keys of [[env]] blocks without saying
// which block, so the message relies on the line number for that.
func indexedPath(key []string) string { return strings.Join(key, ".") }
