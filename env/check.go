package env

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/internal/tomlschema"
)

// Check is the config.EnvChecker backed by the registry: the id must
// name a registered or installed environment (a Lab id "primeintellect/X"
// names builtin X), a version it pins ("id@version") must be one it has,
// and every arg must be one the environment declares.
// Arg types are checked when New builds the environment: Check does not
// build it (which may load a dataset). Config parsing takes it injected,
// so that package config needs no environments.
func Check(id string, args map[string]any) error {
	spec, ok := Lookup(id)
	if !ok {
		if err := needsError(id); err != nil {
			return err
		}
		var ids []string
		for _, s := range List() {
			ids = append(ids, s.ID)
		}
		return fmt.Errorf("unknown environment; known: %s (or install one with `grpo env install DIR`)", strings.Join(ids, ", "))
	}
	if _, v := SplitVersion(id); v != "" {
		if _, err := resolveVersion(spec, v); err != nil {
			return err
		}
	}
	if spec.RawArgs {
		return nil // the environment checks its own args when it loads
	}
	var names []string
	for _, a := range spec.Args {
		names = append(names, a.Name)
	}
	given := make([]string, 0, len(args))
	for k := range args {
		given = append(given, k)
	}
	sort.Strings(given)
	for _, k := range given {
		if slices.Contains(names, k) {
			continue
		}
		msg := fmt.Sprintf("args.%s: unknown argument of %s", k, spec.ID)
		if s := tomlschema.Closest(k, names); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		} else if len(names) == 0 {
			msg += "; it takes no args"
		} else {
			msg += "; valid args: " + strings.Join(names, ", ")
		}
		return argError{k, msg}
	}
	return nil
}

// argError names the arg it is about, so config locates the problem at
// the arg's line.
type argError struct{ arg, msg string }

func (e argError) Error() string   { return e.msg }
func (e argError) ArgName() string { return e.arg }
