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

// GEPA is a GEPA prompt-optimisation config (configs/gepa/*.toml) as
// verifiers' vf-gepa and Lab read it, in either of its layouts: the
// environment at the top level (env_id, env_args, extra_env_kwargs, as
// verifiers' configs/gepa/base.toml and grpo init write it) or in an [env]
// table with the same keys (configs/gepa/wordle.toml). The optimiser that
// runs it is package gepa's; this is its schema and validation.
type GEPA struct {
	// Model is the model whose prompt is optimised (an endpoint id of
	// endpoints.toml, or a model name).
	Model string `toml:"model"`
	// ReflectionModel is the teacher that reads rollouts and proposes
	// new prompts.
	ReflectionModel string `toml:"reflection_model"`
	// EndpointsPath is the endpoints.toml resolving the model names,
	// relative to the config file.
	EndpointsPath string `toml:"endpoints_path"`

	GEPAEnv                 // the top-level layout
	Env       *GEPAEnv      `toml:"env"` // the [env] layout
	GEPA      GEPASettings  `toml:"gepa"`
	Execution GEPAExecution `toml:"execution"`

	src *tomlschema.Source
}

// GEPAEnv names the environment whose prompt is optimised.
type GEPAEnv struct {
	EnvID string `toml:"env_id"`
	// EnvArgs go to the environment's constructor (load_environment);
	// ExtraEnvKwargs are set on it after it is built.
	EnvArgs        map[string]any `toml:"env_args"`
	ExtraEnvKwargs map[string]any `toml:"extra_env_kwargs"`
}

// GEPASettings is [gepa]: the optimisation budget.
type GEPASettings struct {
	// MaxCalls bounds the rollouts scored over the whole optimisation.
	MaxCalls int `toml:"max_calls"`
	// NumTrain and NumVal are the examples of the feedback and the
	// Pareto (validation) sets.
	NumTrain int `toml:"num_train"`
	NumVal   int `toml:"num_val"`
	// MinibatchSize is the examples per reflection step.
	MinibatchSize int `toml:"minibatch_size"`
	// PerfectScore, when set, stops reflecting on a minibatch that all
	// scored it.
	PerfectScore *float64 `toml:"perfect_score"`
	// StateColumns are rollout state fields shown to the reflection model.
	StateColumns []string `toml:"state_columns"`
}

// GEPAExecution is [execution]: how the rollouts run.
type GEPAExecution struct {
	MaxConcurrent int   `toml:"max_concurrent"`
	Seed          int64 `toml:"seed"`
	// SamplingArgs go to the model's API as they are (max_tokens,
	// temperature, ...).
	SamplingArgs map[string]any `toml:"sampling_args"`
}

// DefaultGEPA is what a GEPA file starts from: the budget of verifiers'
// configs/gepa/base.toml (500 calls, 100 train, 50 val, minibatches of 3,
// 32 concurrent rollouts, seed 0).
func DefaultGEPA() GEPA {
	return GEPA{
		GEPA:      GEPASettings{MaxCalls: 500, NumTrain: 100, NumVal: 50, MinibatchSize: 3},
		Execution: GEPAExecution{MaxConcurrent: 32},
	}
}

var gepaSchema = tomlschema.New(DefaultGEPA())

// LoadGEPA reads, parses and validates the GEPA config at path.
func LoadGEPA(path string) (*GEPA, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return ParseGEPA(data, path)
}

// ParseGEPA parses and validates a GEPA config; name prefixes the error
// lines (Problems, in file order). Afterwards the environment is in the
// embedded GEPAEnv whichever layout the file used.
func ParseGEPA(data []byte, name string) (*GEPA, error) {
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		return nil, decodeError(name, err, nil)
	}
	l := &problems{src: tomlschema.Scan(name, data)}
	if _, ok := raw["env"].([]any); ok {
		l.at("key \"env\": `[[env]]` blocks are not a GEPA layout grpo reads: GEPA optimises one environment; write [env] with env_id = \"...\", or env_id at the top level", "env")
		return nil, l.err()
	}
	g := DefaultGEPA()
	err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(&g)
	pm := &posMap{name: name}
	var missing *toml.StrictMissingError
	var de *toml.DecodeError
	switch {
	case errors.As(err, &missing):
		for i := range missing.Errors {
			e := &missing.Errors[i]
			line, col := e.Position()
			l.list = append(l.list, pm.at(line, col, gepaUnknownKey(e.Key())))
		}
	case errors.As(err, &de):
		line, col := de.Position()
		want := "a value of another type"
		if t := gepaSchema.Type(de.Key()); t != nil {
			want = tomlschema.KindName(t)
		}
		l.list = append(l.list, pm.at(line, col, fmt.Sprintf("key %q: want %s; %s", strings.Join(de.Key(), "."), want, strings.TrimPrefix(de.Error(), "toml: "))))
	case err != nil:
		l.add(fmt.Errorf("%s: %v", name, err))
	}
	if err := l.err(); err != nil {
		return nil, err
	}
	g.src = l.src
	g.check(l)
	if err := l.err(); err != nil {
		return nil, err
	}
	return &g, nil
}

func gepaUnknownKey(key []string) string {
	parent, name := key[:len(key)-1], key[len(key)-1]
	where := "at the top level"
	if len(parent) > 0 {
		where = "in [" + strings.Join(parent, ".") + "]"
	}
	msg := fmt.Sprintf("key %q: unknown key %s of a GEPA config", strings.Join(key, "."), where)
	valid := gepaSchema.TableKeys(parent)
	if len(parent) == 0 {
		valid = append(valid, "env_id", "env_args", "extra_env_kwargs")
	}
	if s := tomlschema.Closest(name, valid); s != "" {
		return msg + fmt.Sprintf("; did you mean %q?", s)
	}
	return msg + "; valid keys: " + strings.Join(valid, ", ")
}

// check resolves the layout and checks every value.
func (g *GEPA) check(l *problems) {
	if g.Env != nil {
		if g.EnvID != "" || g.EnvArgs != nil || g.ExtraEnvKwargs != nil {
			l.at("[env] and a top-level env_id/env_args/extra_env_kwargs are two layouts of one setting; keep one", "env_id", "env_args", "extra_env_kwargs")
		} else {
			g.GEPAEnv = *g.Env
		}
	}
	if strings.TrimSpace(g.EnvID) == "" {
		l.at(`key "env_id" is missing: name the environment to optimise, env_id = "primeintellect/wordle" (at the top level or in [env])`, "env")
	}
	if strings.TrimSpace(g.Model) == "" {
		l.at(`key "model" is missing: set model = "..." (an endpoint id of endpoints.toml, or a model name)`)
	}
	if strings.TrimSpace(g.ReflectionModel) == "" {
		l.at(`key "reflection_model" is missing: set reflection_model = "..." (the model that reads rollouts and proposes prompts)`)
	}
	s := g.GEPA
	for _, c := range []struct {
		key string
		v   int
	}{{"max_calls", s.MaxCalls}, {"num_train", s.NumTrain}, {"num_val", s.NumVal}, {"minibatch_size", s.MinibatchSize}} {
		if c.v < 1 {
			l.at(fmt.Sprintf("[gepa] %s = %d: must be at least 1", c.key, c.v), "gepa."+c.key)
		}
	}
	if s.MinibatchSize > s.NumTrain && s.NumTrain >= 1 {
		l.at(fmt.Sprintf("[gepa] minibatch_size = %d exceeds num_train = %d: a minibatch is drawn from the train set", s.MinibatchSize, s.NumTrain), "gepa.minibatch_size", "gepa.num_train")
	}
	if p := s.PerfectScore; p != nil && !(*p > 0 && *p <= 1) {
		l.at(fmt.Sprintf("[gepa] perfect_score = %v: want a reward in (0, 1]", *p), "gepa.perfect_score")
	}
	if g.Execution.MaxConcurrent < 1 {
		l.at(fmt.Sprintf("[execution] max_concurrent = %d: must be at least 1", g.Execution.MaxConcurrent), "execution.max_concurrent")
	}
	sa := g.Execution.SamplingArgs
	if v, ok := sa["max_tokens"]; ok {
		if n, isInt := v.(int64); !isInt || n < 1 {
			l.at(fmt.Sprintf("[execution] sampling_args max_tokens = %v: want a positive integer", v), "execution.sampling_args.max_tokens", "execution.sampling_args")
		}
	}
	if v, ok := sa["temperature"]; ok {
		if x, isNum := number(v); !isNum || x < 0 {
			l.at(fmt.Sprintf("[execution] sampling_args temperature = %v: want a number ≥ 0", v), "execution.sampling_args.temperature", "execution.sampling_args")
		}
	}
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// ValidateEnv checks the environment id and args with check (as
// RegistryEnvCheck), located at the id.
func (g *GEPA) ValidateEnv(check EnvChecker) error {
	if check == nil || g.EnvID == "" {
		return nil
	}
	if err := check(g.EnvID, g.EnvArgs); err != nil {
		l := &problems{src: g.src}
		l.at(fmt.Sprintf("env_id = %q: %v", g.EnvID, err), "env.env_id", "env_id")
		return l.err()
	}
	return nil
}
