package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Change is one key whose value differs between two config texts.
type Change struct {
	Key      string // dotted, with array indices: "env[0].args.n", "max_steps"
	Old, New string // TOML-ish values; "(unset)" where the key is absent
}

func (c Change) String() string { return fmt.Sprintf("%s %s → %s", c.Key, c.Old, c.New) }

// Diff lists the keys whose values differ between two config files' texts,
// sorted by key. It compares what is written (not defaults), so adding a
// key with its default value counts as a change; a file that does not
// parse is an error.
func Diff(oldText, newText []byte) ([]Change, error) {
	var a, b map[string]any
	if err := toml.Unmarshal(oldText, &a); err != nil {
		return nil, fmt.Errorf("earlier config: %v", err)
	}
	if err := toml.Unmarshal(newText, &b); err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	fa, fb := map[string]any{}, map[string]any{}
	flatten("", a, fa)
	flatten("", b, fb)
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	var out []Change
	for k := range keys {
		va, okA := fa[k]
		vb, okB := fb[k]
		if okA && okB && reflect.DeepEqual(va, vb) {
			continue
		}
		out = append(out, Change{Key: k, Old: showValue(va, okA), New: showValue(vb, okB)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// flatten writes v's leaves into out under dotted keys; arrays of tables
// ([[env]]) get indices, other arrays are leaves.
func flatten(prefix string, v any, out map[string]any) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 && prefix != "" {
			out[prefix] = t
		}
		for k, x := range t {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(key, x, out)
		}
	case []any:
		tables := len(t) > 0
		for _, x := range t {
			_, ok := x.(map[string]any)
			tables = tables && ok
		}
		if !tables {
			out[prefix] = t
			return
		}
		for i, x := range t {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), x, out)
		}
	default:
		out[prefix] = v
	}
}

func showValue(v any, ok bool) string {
	if !ok {
		return "(unset)"
	}
	if s, isStr := v.(string); isStr {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// BindsCheckpoint reports whether a key fixes what a checkpoint holds: the
// base model, the adapter's shape, the seed and the environment mixture a
// checkpoint's data position counts in. Changing one of these between a
// run and its resume leaves a checkpoint that no longer belongs to the
// config; any other key (max_steps, lr, intervals, sampling) may be
// changed to continue a run differently.
func BindsCheckpoint(key string) bool {
	top, _, _ := strings.Cut(key, ".")
	top, _, _ = strings.Cut(top, "[")
	switch top {
	case "model", "seed", "lora", "lora_alpha", "env", "rollouts_per_example":
		return true
	}
	return false
}

// SplitByCheckpoint divides changes into those a checkpoint is bound to
// (BindsCheckpoint), which a resume refuses, and the others, which it
// follows with a warning; each as Change.String writes it.
func SplitByCheckpoint(changes []Change) (bound, other []string) {
	for _, c := range changes {
		if BindsCheckpoint(c.Key) {
			bound = append(bound, c.String())
		} else {
			other = append(other, c.String())
		}
	}
	return bound, other
}
