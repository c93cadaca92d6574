package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/grpo-dev/grpo/internal/tomlschema"
	"github.com/pelletier/go-toml/v2"
)

// Load reads, parses and validates the run config at path. See
// Parse.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(data, path)
}

// Parse parses and validates a run config; name (usually the file
// path) prefixes error messages. Keys the file leaves out keep
// DefaultConfig's values. Every error is one line,
// "name:line:col: key ...: problem; fix". Unknown keys are errors (with a
// did-you-mean); Lab keys that only matter on Prime's hosted service are
// accepted and listed in Config.Warnings. Env ids and args are not checked
// here: call ValidateEnvs with the environment registry.
func Parse(data []byte, name string) (*Config, error) {
	// A loose decode first: it reports syntax errors, and the raw values
	// tell apart what the typed decode cannot (loss = "rl" vs [loss]).
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		if e, ok := nonASCIIKeyError(name, data, err); ok {
			return nil, e
		}
		return nil, decodeError(name, err, nil)
	}
	src := tomlschema.Scan(name, data)
	if err := checkTables(src, raw); err != nil {
		return nil, err
	}
	cfg := DefaultConfig()
	data, err := takeLossMode(src, raw, data, &cfg)
	if err != nil {
		return nil, err
	}
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, decodeError(name, err, raw)
	}
	cfg.src = src
	if err := cfg.resolveLab(raw); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// checkTables catches what TOML allows but the schema does not: [env]
// written as a single table (go-toml would quietly decode it as a
// one-element array), teacher without SFT, and optimizer betas of the
// wrong length (a [2]float64 takes the first two of any array).
func checkTables(src *tomlschema.Source, raw map[string]any) error {
	arrays := map[string]bool{}
	for _, h := range src.Headers {
		if h.Array {
			arrays[strings.Join(h.Path, ".")] = true
			continue
		}
		for _, p := range []string{"env", "eval.env"} {
			n := len(strings.Split(p, "."))
			if len(h.Path) >= n && strings.Join(h.Path[:n], ".") == p && !arrays[p] {
				return fmt.Errorf("%s:%d:%d: %s", src.Name, h.At.Line, h.At.Column, singleBracketMsg(p))
			}
		}
	}
	if _, ok := raw["teacher"]; ok {
		return src.At(`key "teacher": a teacher model is only used with loss = "sft", which grpo does not run; remove [teacher]`, "teacher")
	}
	if opt, ok := raw["optimizer"].(map[string]any); ok {
		if b, ok := opt["betas"].([]any); ok && len(b) != 2 {
			return src.At(fmt.Sprintf(`key "optimizer.betas": %d values; write exactly two, e.g. betas = [0.9, 0.999]`, len(b)), "optimizer.betas")
		}
	}
	return nil
}

func singleBracketMsg(p string) string {
	return fmt.Sprintf("key %q: `[%s]` must be written `[[%s]]` (an array of tables: one block per environment)", p, p, p)
}

// takeLossMode handles Lab's top-level loss = "rl", which shares its name
// with grpo's [loss] table: it records the string and blanks the line
// (spaces keep every other position) so the typed decode sees [loss] only.
func takeLossMode(src *tomlschema.Source, raw map[string]any, data []byte, cfg *Config) ([]byte, error) {
	mode, ok := raw["loss"].(string)
	if !ok {
		return data, nil
	}
	if mode != "rl" {
		return nil, src.At(fmt.Sprintf(`key "loss": loss = %q is not supported: grpo trains with RL only; set loss = "rl" or remove the key (grpo's loss settings live in the [loss] table)`, mode), "loss")
	}
	cfg.LossMode = mode
	r := src.KV["loss"]
	out := append([]byte(nil), data...)
	for i := r.Offset; i < r.Offset+r.Length; i++ {
		if out[i] != '\n' {
			out[i] = ' '
		}
	}
	return out, nil
}

// decodeError turns a go-toml error into one line naming the key and the
// fix.
func decodeError(name string, err error, raw map[string]any) error {
	var missing *toml.StrictMissingError
	if errors.As(err, &missing) && len(missing.Errors) > 0 {
		e := &missing.Errors[0]
		line, col := e.Position()
		msg := unknownKeyMsg(e.Key())
		if n := len(missing.Errors) - 1; n > 0 {
			msg += fmt.Sprintf(" (and %d more unknown key(s))", n)
		}
		return fmt.Errorf("%s:%d:%d: %s", name, line, col, msg)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return fmt.Errorf("%s:%d:%d: %s", name, line, col, typeErrorMsg(de.Key(), strings.TrimPrefix(de.Error(), "toml: "), raw))
	}
	return fmt.Errorf("%s: %v", name, err)
}
