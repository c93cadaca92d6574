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

// GEPA is a GEPA prompt-optimisation config (configs/gepa/*.toml) in any
// of the layouts Lab users write (docs/gepa.md has the mapping):
//
//   - verifiers' vf-gepa: the environment at the top level (env_id,
//     env_args, extra_env_kwargs; verifiers 8d4b33247's configs/gepa/base.toml,
//     grpo init --legacy-configs),
//     or in an [env] table with the same keys or Lab's id/args, or in a
//     single [[env]] block (verifiers a60a606's files, which grpo init
//     writes); reflection_model, endpoints_path, [gepa]
//     (max_calls, num_train, num_val, minibatch_size, perfect_score,
//     state_columns, and max_concurrent and seed, which may also sit in
//     [execution]), sampling as [execution] sampling_args or [sampling];
//   - the seed's: environment (= env_id), teacher_model
//     (= reflection_model), n_eval_samples (= num_val), and generations
//     and population_size, whose product times n_eval_samples is the
//     budget max_calls (the rollouts a generational search of that size
//     scores).
//
// After ParseGEPA every setting is in the canonical fields (GEPAEnv,
// ReflectionModel, GEPA, Execution) whichever layout the file used. The
// optimiser that runs it is package gepa's; this is its schema and
// validation.
type GEPA struct {
	// Model is the model whose prompt is optimised: an endpoint id of
	// endpoints.toml, or a model (directory or hub id) loaded here.
	Model string `toml:"model"`
	// Adapter is a PEFT adapter applied to a Model loaded here.
	Adapter string `toml:"adapter"`
	// ReflectionModel is the teacher that reads rollouts and proposes
	// new prompts (an endpoint id, or a model loaded here).
	ReflectionModel string `toml:"reflection_model"`
	// EndpointsPath is the endpoints.toml resolving the model names,
	// relative to the config file.
	EndpointsPath string `toml:"endpoints_path"`

	GEPAEnv                 // the top-level layout
	Env       *GEPAEnvTable `toml:"env"` // the [env] layout
	GEPA      GEPASettings  `toml:"gepa"`
	Execution GEPAExecution `toml:"execution"`
	// Sampling is [sampling]: the same keys as [execution] sampling_args.
	Sampling map[string]any `toml:"sampling"`

	// The seed layout's keys (see the type's comment).
	Environment    string `toml:"environment"`
	TeacherModel   string `toml:"teacher_model"`
	Generations    int    `toml:"generations"`
	PopulationSize int    `toml:"population_size"`
	NEvalSamples   int    `toml:"n_eval_samples"`

	// Warnings lists the keys accepted but ignored locally, one line each
	// with file and line. The parser does not print them.
	Warnings []string `toml:"-"`

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

// GEPAEnvTable is [env] (or one [[env]] block): GEPAEnv's keys, or Lab's
// id and args.
type GEPAEnvTable struct {
	GEPAEnv
	ID   string         `toml:"id"`
	Args map[string]any `toml:"args"`
}

// gepaArrayFile decodes the [[env]] layout: its Env shadows GEPA's.
type gepaArrayFile struct {
	GEPA
	Env []GEPAEnvTable `toml:"env"`
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
	// MaxConcurrent and Seed are [execution]'s, written here.
	MaxConcurrent *int   `toml:"max_concurrent"`
	Seed          *int64 `toml:"seed"`
	// UseMerge turns on merge iterations: after an accepted mutation the
	// teacher combines two non-dominated candidates, at most
	// MaxMergeInvocations times.
	UseMerge            bool `toml:"use_merge"`
	MaxMergeInvocations int  `toml:"max_merge_invocations"`
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
// 32 concurrent rollouts, seed 0), merges off (5 when turned on).
func DefaultGEPA() GEPA {
	return GEPA{
		GEPA:      GEPASettings{MaxCalls: 500, NumTrain: 100, NumVal: 50, MinibatchSize: 3, MaxMergeInvocations: 5},
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
	g := DefaultGEPA()
	var target any = &g
	blocks, isArray := raw["env"].([]any)
	arr := gepaArrayFile{GEPA: g}
	if isArray {
		if len(blocks) != 1 {
			l.at(fmt.Sprintf("key \"env\": %d [[env]] blocks; GEPA optimises one environment's prompt: keep one block (or write [env])", len(blocks)), "env")
			return nil, l.err()
		}
		target = &arr
	}
	err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(target)
	if isArray {
		g = arr.GEPA
		g.Env = &arr.Env[0]
	}
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
	g.resolveLayouts(l, isArray)
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

// check checks every value.
func (g *GEPA) check(l *problems) {
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
	if _, bad := g.samplingParams(); len(bad) > 0 {
		where := "[execution] sampling_args"
		paths := []string{"execution.sampling_args"}
		if g.Sampling != nil {
			where, paths = "[sampling]", []string{"sampling"}
		}
		for _, b := range bad {
			key, _, _ := strings.Cut(b, " ")
			key = strings.TrimSuffix(key, ":")
			l.at(where+" "+b, append([]string{paths[0] + "." + key}, paths...)...)
		}
	}
	if s.UseMerge && s.MaxMergeInvocations < 1 {
		l.at(fmt.Sprintf("[gepa] max_merge_invocations = %d: must be at least 1 when use_merge = true", s.MaxMergeInvocations), "gepa.max_merge_invocations")
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
// env.Check), located at the id.
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
