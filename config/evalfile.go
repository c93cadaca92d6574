package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/internal/tomlschema"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/pelletier/go-toml/v2"
)

// evalSchema is EvalFile's key tree, for the did-you-mean of unknown keys.
var evalSchema = tomlschema.New(EvalFile{})

// EvalFile is an eval config: the TOML layout of Prime Intellect Lab's
// configs/eval/*.toml (verifiers' `prime eval run CONFIG.toml`). Top-level
// keys are defaults for every [[eval]] block; a block's own keys win:
//
//	model = "Qwen/Qwen3-0.6B"
//	num_examples = 50
//	rollouts_per_example = 3
//
//	[[eval]]
//	id = "gsm8k"                    # env_id is accepted too
//	args = { num_eval_examples = 200 }
//
//	[[eval]]
//	id = "reverse-text"
//	num_examples = 20
//
// Keys that configure Prime's API clients and hosted service (endpoint_id,
// max_concurrent, save_results, …) are accepted and listed in Warnings.
type EvalFile struct {
	EvalSettings
	Eval []EvalBlock `toml:"eval"`

	// Warnings lists, once each, the keys accepted but ignored locally.
	Warnings []string `toml:"-"`
}

// EvalSettings are the keys that may be written at the top level (as
// defaults) or in an [[eval]] block. Pointers tell "unset" from zero.
type EvalSettings struct {
	// Model is a Hugging Face repo id or a local model directory.
	Model string `toml:"model"`
	// Adapter is a PEFT LoRA adapter directory applied to Model (grpo's key).
	Adapter            string   `toml:"adapter"`
	NumExamples        *int     `toml:"num_examples"`
	RolloutsPerExample *int     `toml:"rollouts_per_example"`
	MaxTokens          *int     `toml:"max_tokens"`
	Temperature        *float64 `toml:"temperature"`
	// SamplingArgs are Prime's extra sampling parameters.
	SamplingArgs *EvalSamplingArgs `toml:"sampling_args"`
	// ExtraEnvKwargs are merged into the env args (grpo's environments
	// take every setting as an arg).
	ExtraEnvKwargs map[string]any `toml:"extra_env_kwargs"`
	// grpo's own keys.
	EnableThinking *bool  `toml:"enable_thinking"`
	Seed           *int64 `toml:"seed"`
	Device         string `toml:"device"`

	// Prime keys with no local effect: API clients, concurrency, saving.
	EnvDirPath         string         `toml:"env_dir_path"`
	EndpointsPath      string         `toml:"endpoints_path"`
	EndpointID         string         `toml:"endpoint_id"`
	APIKeyVar          string         `toml:"api_key_var"`
	APIBaseURL         string         `toml:"api_base_url"`
	Header             []string       `toml:"header"`
	Headers            map[string]any `toml:"headers"`
	MaxConcurrent      *int           `toml:"max_concurrent"`
	IndependentScoring *bool          `toml:"independent_scoring"`
	MaxRetries         *int           `toml:"max_retries"`
	Verbose            *bool          `toml:"verbose"`
	Debug              *bool          `toml:"debug"`
	StateColumns       []string       `toml:"state_columns"`
	SaveResults        *bool          `toml:"save_results"`
	Resume             any            `toml:"resume"`
	ResumePath         string         `toml:"resume_path"`
	SaveToHFHub        *bool          `toml:"save_to_hf_hub"`
	HFHubDatasetName   string         `toml:"hf_hub_dataset_name"`
}

// EvalBlock is one [[eval]] block.
type EvalBlock struct {
	// ID is the environment id; EnvID is its older spelling (env_id).
	ID    string `toml:"id"`
	EnvID string `toml:"env_id"`
	// Args (env_args) are the environment's arguments.
	Args    map[string]any `toml:"args"`
	EnvArgs map[string]any `toml:"env_args"`
	// Name labels the env in tables and results; default the id.
	Name string `toml:"name"`
	// Version selects the environment's behaviour, as [[env]]'s; the id
	// may pin it too ("gsm8k@v0").
	Version string `toml:"version"`
	EvalSettings
}

// EvalSamplingArgs is sampling_args: a sampling override with Prime's
// seed and its API-server fields.
type EvalSamplingArgs struct {
	sampler.Overrides
	// Seed seeds the evaluation, not one sequence; Specs reads it.
	Seed *int64 `toml:"seed"`
	// ReasoningEffort is gpt-oss's template variable (chat.ReasoningEffortVar).
	ReasoningEffort string `toml:"reasoning_effort"`
	// Accepted and ignored: an API server's extra request fields.
	ExtraBody map[string]any `toml:"extra_body"`
}

// checkSampling validates an override laid over the sampler's defaults
// with sampler.Params' Validate; the message starts with the key.
func checkSampling(o sampler.Overrides) error {
	p := sampler.DefaultParams()
	o.Apply(&p)
	return p.Validate()
}

// sampling is one level's sampling keys as one override: the settings'
// own temperature and max_tokens over their sampling_args' (the two may
// not disagree; checkEvalSettings says so).
func (s *EvalSettings) sampling() sampler.Overrides {
	var args sampler.Overrides
	if s.SamplingArgs != nil {
		args = s.SamplingArgs.Overrides
	}
	return sampler.Overrides{Temperature: s.Temperature, MaxTokens: s.MaxTokens}.Over(args)
}

// LoadEval reads and parses an eval config; see ParseEval.
func LoadEval(path string) (*EvalFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading eval config: %w", err)
	}
	return ParseEval(data, path)
}

// ParseEval parses an eval config strictly: unknown keys, wrong types
// and missing ids are one-line errors "name:line:col: key ...: problem;
// fix". Env ids and args are not checked here: Specs then
// env.Check (or env.New) do.
func ParseEval(data []byte, name string) (*EvalFile, error) {
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		if e, ok := nonASCIIKeyError(name, data, err); ok {
			return nil, e
		}
		return nil, evalDecodeError(name, nil, err)
	}
	src := tomlschema.Scan(name, data)
	for _, h := range src.Headers {
		if len(h.Path) == 1 && h.Path[0] == "eval" && !h.Array {
			return nil, fmt.Errorf("%s:%d:%d: `[eval]` must be written `[[eval]]` (an array of tables: one block per environment)", name, h.At.Line, h.At.Column)
		}
	}
	var f EvalFile
	if err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(&f); err != nil {
		return nil, evalDecodeError(name, src, err)
	}
	if len(f.Eval) == 0 {
		return nil, fmt.Errorf(`%s: no [[eval]] block; add one per environment, e.g. [[eval]] then id = "reverse-text"`, name)
	}
	if err := checkEvalSettings(src, "", f.EvalSettings); err != nil {
		return nil, err
	}
	for i := range f.Eval {
		b := &f.Eval[i]
		p := fmt.Sprintf("eval.%d", i)
		switch {
		case b.ID != "" && b.EnvID != "" && b.ID != b.EnvID:
			return nil, src.At(fmt.Sprintf("[[eval]] %d: id = %q and env_id = %q disagree; keep one of them", i+1, b.ID, b.EnvID), p+".env_id")
		case b.ID == "":
			b.ID = b.EnvID
		}
		if b.ID == "" {
			return nil, src.At(fmt.Sprintf(`[[eval]] %d has no id; set id = "reverse-text" (an environment id, see grpo env list)`, i+1), p)
		}
		if b.Version != "" {
			if at := strings.LastIndex(b.ID, "@"); at >= 0 && b.ID[at+1:] != b.Version {
				return nil, src.At(fmt.Sprintf("[[eval]] %d: id = %q pins version %q but version = %q; keep one of them", i+1, b.ID, b.ID[at+1:], b.Version), p+".version")
			}
			b.ID = envRef(strings.Split(b.ID, "@")[0], b.Version)
		}
		if b.Args != nil && b.EnvArgs != nil {
			return nil, src.At(fmt.Sprintf("[[eval]] %d (id = %q): both args and env_args are set; keep one of them", i+1, b.ID), p+".env_args")
		}
		if b.Args == nil {
			b.Args = b.EnvArgs
		}
		if b.Name == "" {
			b.Name = b.ID
		}
		if err := checkEvalSettings(src, p+".", b.EvalSettings); err != nil {
			return nil, err
		}
	}
	seen := map[string]int{}
	for i, b := range f.Eval {
		if j, dup := seen[b.Name]; dup {
			return nil, src.At(fmt.Sprintf("[[eval]] %d and %d are both named %q; set name = \"...\" on one of them so their results can be told apart", j+1, i+1, b.Name), fmt.Sprintf("eval.%d", i))
		}
		seen[b.Name] = i
	}
	f.Warnings = evalWarnings(src)
	return &f, nil
}

// checkEvalSettings checks ranges of one level of settings; prefix is ""
// for the top level or "eval.N.".
func checkEvalSettings(src *tomlschema.Source, prefix string, s EvalSettings) error {
	at := func(key, msg string, args ...any) error {
		return src.At(fmt.Sprintf("key %q: ", tomlschema.DisplayKey(prefix+key))+fmt.Sprintf(msg, args...), prefix+key)
	}
	if n := s.NumExamples; n != nil && *n < 1 && *n != -1 {
		return at("num_examples", "num_examples = %d: want at least 1, or -1 for the whole eval split", *n)
	}
	if r := s.RolloutsPerExample; r != nil && *r < 1 {
		return at("rollouts_per_example", "rollouts_per_example = %d: want at least 1", *r)
	}
	if m := s.MaxTokens; m != nil && *m < 1 {
		return at("max_tokens", "max_tokens = %d: want at least 1, e.g. max_tokens = 512", *m)
	}
	if err := checkSampling(sampler.Overrides{Temperature: s.Temperature}); err != nil {
		return at(paramKey(err), "%v", err)
	}
	if s.Device != "" {
		if err := checkDevice(s.Device); err != nil {
			return at("device", "%v", err)
		}
	}
	if sa := s.SamplingArgs; sa != nil {
		p := "sampling_args."
		if m := sa.MaxTokens; m != nil && *m < 1 {
			return at(p+"max_tokens", "max_tokens = %d: want at least 1", *m)
		}
		if err := checkSampling(sa.Overrides); err != nil {
			return at(p+paramKey(err), "%v", err)
		}
		if err := chat.CheckReasoningEffort(sa.ReasoningEffort); err != nil {
			return at(p+"reasoning_effort", "%v", err)
		}
		switch {
		case sa.MaxTokens != nil && s.MaxTokens != nil && *sa.MaxTokens != *s.MaxTokens:
			return at(p+"max_tokens", "sampling_args.max_tokens = %d conflicts with max_tokens = %d; keep one of them", *sa.MaxTokens, *s.MaxTokens)
		case sa.Temperature != nil && s.Temperature != nil && *sa.Temperature != *s.Temperature:
			return at(p+"temperature", "sampling_args.temperature = %v conflicts with temperature = %v; keep one of them", *sa.Temperature, *s.Temperature)
		}
	}
	return nil
}

// evalIgnored are the Prime keys accepted and ignored, with the reason.
var evalIgnored = map[string]string{
	"env_dir_path":             "grpo finds environments by id (grpo env list)",
	"endpoints_path":           "grpo runs the model in-process, with no API endpoint",
	"endpoint_id":              "grpo runs the model in-process, with no API endpoint; set model",
	"api_key_var":              "grpo runs the model in-process, with no API",
	"api_base_url":             "grpo runs the model in-process, with no API",
	"header":                   "grpo runs the model in-process, with no API",
	"headers":                  "grpo runs the model in-process, with no API",
	"max_concurrent":           "grpo batches rollouts on the device (see --batch)",
	"independent_scoring":      "grpo scores each rollout on its own already",
	"max_retries":              "environments run in-process, with nothing to retry",
	"verbose":                  "use the command line instead",
	"debug":                    "use the command line instead",
	"state_columns":            "results always hold every rollout's messages, reward and metrics",
	"save_results":             "grpo always writes the results JSONL",
	"resume":                   "grpo does not resume evaluations",
	"resume_path":              "grpo does not resume evaluations",
	"save_to_hf_hub":           "grpo does not upload results",
	"hf_hub_dataset_name":      "grpo does not upload results",
	"sampling_args.extra_body": "grpo sends no extra request fields, in-process or to an endpoint",
}

// evalWarnings lists the ignored keys the file sets, once each, sorted.
func evalWarnings(src *tomlschema.Source) []string {
	seen := map[string]bool{}
	for path := range src.Pos {
		parts := strings.Split(path, ".")
		if len(parts) >= 3 && parts[0] == "eval" {
			parts = parts[2:]
		}
		k := strings.Join(parts, ".")
		if _, ok := evalIgnored[k]; ok {
			seen[k] = true
		}
	}
	var out []string
	for k := range seen {
		out = append(out, fmt.Sprintf("%s: accepted and ignored locally: %s", k, evalIgnored[k]))
	}
	sort.Strings(out)
	return out
}

// evalDecodeError turns a go-toml error into one positioned line.
func evalDecodeError(name string, src *tomlschema.Source, err error) error {
	var missing *toml.StrictMissingError
	if errors.As(err, &missing) && len(missing.Errors) > 0 {
		e := &missing.Errors[0]
		line, col := e.Position()
		key := e.Key()
		// go-toml's key drops array indices and inline-table parents; the
		// source index knows the full path written at this position.
		if src != nil {
			for path, pos := range src.Pos {
				if pos.Line == line && pos.Column == col {
					key = strings.Split(path, ".")
				}
			}
		}
		parent := tomlschema.StripIndices(key[:len(key)-1])
		valid := evalSchema.TableKeys(parent)
		sort.Strings(valid)
		msg := fmt.Sprintf("key %q: unknown key", tomlschema.DisplayKey(strings.Join(key, ".")))
		if len(parent) > 0 {
			msg += " in [" + strings.Join(parent, ".") + "]"
		}
		if s := tomlschema.Closest(key[len(key)-1], valid); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		} else {
			msg += "; valid keys: " + strings.Join(valid, ", ")
		}
		return fmt.Errorf("%s:%d:%d: %s", name, line, col, msg)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		if typed, ok := evalTypeMsg(de.Key(), msg); ok {
			msg = typed
		} else if k := de.Key(); len(k) > 0 {
			msg = fmt.Sprintf("key %q: %s", tomlschema.DisplayKey(strings.Join(k, ".")), msg)
		} else {
			msg += "; fix the TOML syntax"
		}
		return fmt.Errorf("%s:%d:%d: %s", name, line, col, msg)
	}
	return fmt.Errorf("%s: %v", name, err)
}
