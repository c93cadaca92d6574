package config

import (
	"fmt"
	"strings"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/internal/tomlschema"
)

// RegistryEnvCheck is the EnvChecker backed by package env's registry: the
// id must name a registered or installed environment (a Lab id
// "primeintellect/X" names builtin X) and every arg must be one the
// environment declares. Arg types are checked when env.New builds the
// environment: env does not yet export its args validation without
// building (which may load a dataset).
func RegistryEnvCheck(id string, args map[string]any) error {
	spec, ok := env.Lookup(id)
	if !ok {
		var ids []string
		for _, s := range env.List() {
			ids = append(ids, s.ID)
		}
		return fmt.Errorf("unknown environment; known: %s (or install one with `grpo env install DIR`)", strings.Join(ids, ", "))
	}
	if spec.RawArgs {
		return nil // the environment checks its own args when it loads
	}
	var names []string
	for _, a := range spec.Args {
		names = append(names, a.Name)
	}
	for _, k := range sortedKeys(args) {
		if contains(names, k) {
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
		return envArgError{k, msg}
	}
	return nil
}

// envArgError names the arg it is about, so ValidateEnvs points at its line.
type envArgError struct{ arg, msg string }

func (e envArgError) Error() string   { return e.msg }
func (e envArgError) ArgName() string { return e.arg }
