package config

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/internal/tomlschema"
	"github.com/grpo-dev/grpo/sampler"
)

// resolveLayouts moves every layout's keys into the canonical fields,
// adding a problem where two layouts give one setting.
func (g *GEPA) resolveLayouts(l *problems, isArray bool) {
	s := g.src
	envKey := "env"
	if isArray {
		envKey = "env.0"
	}
	if t := g.Env; t != nil {
		if g.EnvID != "" || g.EnvArgs != nil || g.ExtraEnvKwargs != nil {
			l.at("[env] and a top-level env_id/env_args/extra_env_kwargs are two layouts of one setting; keep one", "env_id", "env_args", "extra_env_kwargs")
		} else {
			e := t.GEPAEnv
			switch {
			case t.ID != "" && e.EnvID != "" && t.ID != e.EnvID:
				l.at(fmt.Sprintf("[env] id = %q and env_id = %q name two environments; keep one of them", t.ID, e.EnvID), envKey+".id")
			case t.ID != "":
				e.EnvID = t.ID
			}
			switch {
			case t.Args != nil && e.EnvArgs != nil:
				l.at("[env] args and env_args are two spellings of one setting; keep one of them", envKey+".args")
			case t.Args != nil:
				e.EnvArgs = t.Args
			}
			g.GEPAEnv = e
		}
	}
	if g.Environment != "" {
		if g.EnvID != "" && g.EnvID != g.Environment {
			l.at(fmt.Sprintf("key \"environment\": environment = %q and env_id = %q name two environments; keep one of them", g.Environment, g.EnvID), "environment")
		} else {
			g.EnvID = g.Environment
		}
	}
	if g.TeacherModel != "" {
		if g.ReflectionModel != "" && g.ReflectionModel != g.TeacherModel {
			l.at(fmt.Sprintf("key \"teacher_model\": teacher_model = %q and reflection_model = %q name two teachers; keep one of them", g.TeacherModel, g.ReflectionModel), "teacher_model")
		} else {
			g.ReflectionModel = g.TeacherModel
		}
	}
	if s.Has("n_eval_samples") {
		if s.Has("gepa.num_val") && g.GEPA.NumVal != g.NEvalSamples {
			l.at(fmt.Sprintf("key \"n_eval_samples\": n_eval_samples = %d conflicts with [gepa] num_val = %d; keep one of them", g.NEvalSamples, g.GEPA.NumVal), "n_eval_samples")
		} else {
			g.GEPA.NumVal = g.NEvalSamples
		}
	}
	gen, pop := s.Has("generations"), s.Has("population_size")
	switch {
	case gen != pop:
		l.at("generations and population_size come together: their product times n_eval_samples is the budget max_calls; give both, or [gepa] max_calls instead", "generations", "population_size")
	case gen && s.Has("gepa.max_calls"):
		l.at("generations × population_size and [gepa] max_calls both set the budget; keep one of them", "generations", "gepa.max_calls")
	case gen && (g.Generations < 1 || g.PopulationSize < 1):
		l.at(fmt.Sprintf("generations = %d, population_size = %d: both must be at least 1", g.Generations, g.PopulationSize), "generations", "population_size")
	case gen:
		g.GEPA.MaxCalls = g.Generations * g.PopulationSize * max(g.GEPA.NumVal, 1)
	}
	if v := g.GEPA.MaxConcurrent; v != nil {
		if s.Has("execution.max_concurrent") && g.Execution.MaxConcurrent != *v {
			l.at(fmt.Sprintf("[gepa] max_concurrent = %d conflicts with [execution] max_concurrent = %d; keep one of them", *v, g.Execution.MaxConcurrent), "gepa.max_concurrent")
		} else {
			g.Execution.MaxConcurrent = *v
		}
	}
	if v := g.GEPA.Seed; v != nil {
		if s.Has("execution.seed") && g.Execution.Seed != *v {
			l.at(fmt.Sprintf("[gepa] seed = %d conflicts with [execution] seed = %d; keep one of them", *v, g.Execution.Seed), "gepa.seed")
		} else {
			g.Execution.Seed = *v
		}
	}
	if g.Sampling != nil {
		if g.Execution.SamplingArgs != nil {
			l.at("[sampling] and [execution] sampling_args are two layouts of one setting; keep one", "sampling", "execution.sampling_args")
		} else {
			g.Execution.SamplingArgs = g.Sampling
		}
	}
}

// gepaSamplingKeys are the sampling_args grpo's student and teacher read.
var gepaSamplingKeys = []string{"max_tokens", "temperature", "top_p", "top_k", "min_p", "stop"}

// SamplingParams are the sampling args as sampler parameters (the
// sampler's defaults where a key is absent). check has vetted them.
func (g *GEPA) SamplingParams() sampler.Params {
	p, _ := g.samplingParams()
	return p
}

// ReasoningEffort is the sampling args' reasoning_effort (the [sampling]
// or execution.sampling_args key verifiers a60a606's gpt-oss.toml sets),
// for the student's chat template; "" when unset.
func (g *GEPA) ReasoningEffort() string {
	e, _ := g.Execution.SamplingArgs["reasoning_effort"].(string)
	return e
}

func (g *GEPA) samplingParams() (sampler.Params, []string) {
	o, bad := gepaSamplingOverrides(g.Execution.SamplingArgs)
	p := sampler.DefaultParams()
	o.Apply(&p)
	if len(bad) == 0 {
		if err := p.Validate(); err != nil {
			bad = append(bad, err.Error())
		}
	}
	return p, bad
}

// gepaSamplingOverrides reads the sampling args, a table sent to APIs as
// it is, into an override; bad lists, in key order, those it cannot read
// ("key = value: problem" or "key: problem").
func gepaSamplingOverrides(sa map[string]any) (o sampler.Overrides, bad []string) {
	keys := make([]string, 0, len(sa))
	for k := range sa {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := sa[k]
		x, isNum := number(v)
		switch k {
		case "max_tokens":
			n, ok := v.(int64)
			if !ok || n < 1 {
				bad = append(bad, fmt.Sprintf("max_tokens = %v: want a positive integer", v))
				continue
			}
			maxTokens := int(n)
			o.MaxTokens = &maxTokens
		case "temperature", "top_p", "min_p":
			if !isNum {
				bad = append(bad, fmt.Sprintf("%s = %v: want a number", k, v))
				continue
			}
			*map[string]**float64{"temperature": &o.Temperature, "top_p": &o.TopP, "min_p": &o.MinP}[k] = &x
		case "top_k":
			n, ok := v.(int64)
			if !ok {
				bad = append(bad, fmt.Sprintf("top_k = %v: want an integer (-1 or 0: off)", v))
				continue
			}
			topK := int(n)
			o.TopK = &topK
		case "reasoning_effort":
			// gpt-oss's template variable: checked here, read by
			// ReasoningEffort.
			if e, ok := v.(string); !ok {
				bad = append(bad, fmt.Sprintf(`reasoning_effort = %v: want "low", "medium" or "high"`, v))
			} else if err := chat.CheckReasoningEffort(e); err != nil {
				bad = append(bad, err.Error())
			}
		case "stop":
			list, ok := v.([]any)
			if s, isStr := v.(string); isStr {
				list, ok = []any{s}, true
			}
			for _, e := range list {
				if s, isStr := e.(string); isStr {
					o.Stop = append(o.Stop, s)
				} else {
					ok = false
				}
			}
			if !ok {
				bad = append(bad, fmt.Sprintf("stop = %v: want a string or a list of strings", v))
			}
		default:
			msg := fmt.Sprintf("%s: not a sampling key grpo reads (it reads %s)", k, strings.Join(gepaSamplingKeys, ", "))
			if c := tomlschema.Closest(k, gepaSamplingKeys); c != "" {
				msg += fmt.Sprintf("; did you mean %q?", c)
			}
			bad = append(bad, msg)
		}
	}
	return o, bad
}

// EndpointsFile is endpoints_path resolved against the directory of the
// config file at configPath ("" when the file names none).
func (g *GEPA) EndpointsFile(configPath string) string {
	if g.EndpointsPath == "" || filepath.IsAbs(g.EndpointsPath) {
		return g.EndpointsPath
	}
	return filepath.Join(filepath.Dir(configPath), g.EndpointsPath)
}
