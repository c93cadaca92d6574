// Package custom runs environments defined by an environment.toml
// directory: a dataset, a prompt template, rubric terms and optional
// tools, written without Go. It loads and installs them and registers a
// finder with package env on init, so that a config names one by its
// directory or its id.
package custom

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/rubric"
)

// customEnv is an environment defined by an environment.toml directory:
// single-turn, prompt from a template, rubric from the [[rubric]] terms.
type customEnv struct {
	dir     string
	cfg     *customConfig
	opts    env.Options
	system  string
	tmpl    *template
	rb      *rubric.Rubric
	nTrain  int
	nEval   int
	tools   []env.Tool
	once    [2]sync.Once
	cache   [2][]env.Example
	loadErr [2]error
}

// customArgs are the args every custom environment takes.
func customArgs(cfg *customConfig) []env.ArgSpec {
	return []env.ArgSpec{
		{Name: "num_train_examples", Type: env.ArgInt, Default: -1, Help: "use the first N training rows (-1: all)"},
		{Name: "num_eval_examples", Type: env.ArgInt, Default: -1, Help: "use the first N eval rows (-1: all)"},
		{Name: "system_prompt", Type: env.ArgString, Default: cfg.SystemPrompt, Help: "system message before each question"},
	}
}

// LoadDir reads the environment in dir (its environment.toml and, lazily,
// its data) as a registry Spec; New on the Spec builds the environment.
func LoadDir(dir string) (env.Spec, error) {
	cfg, err := readCustomConfig(dir)
	if err != nil {
		return env.Spec{}, err
	}
	desc := cfg.Description
	if desc == "" {
		desc = "custom environment in " + dir
	}
	return env.Spec{
		ID:          cfg.ID,
		Description: desc,
		Args:        customArgs(cfg),
		Dir:         dir,
		New: func(a env.Args, o env.Options) (env.Environment, error) {
			e, err := newCustomEnv(dir, cfg, a, o)
			switch {
			case err != nil:
				return nil, err
			case cfg.Agent != nil:
				return agentEnv{e}, nil
			}
			return e, nil
		},
	}, nil
}

func newCustomEnv(dir string, cfg *customConfig, a env.Args, o env.Options) (*customEnv, error) {
	tmpl, err := parseTemplate(cfg.PromptTemplate)
	if err != nil {
		return nil, err
	}
	f := &configFile{path: filepath.Join(dir, ConfigFile)}
	terms := make([]rubric.Term, 0, len(cfg.Rubric))
	parse := parserFor(cfg.Parser)
	for i, tc := range cfg.Rubric {
		t, err := buildTerm(dir, cfg.Parser, parse, tc)
		if err != nil {
			f.src = readFileOrEmpty(f.path)
			return nil, fmt.Errorf("%s: [[rubric]] %d: %v", f.at("type", i), i+1, err)
		}
		terms = append(terms, t)
	}
	rb, err := rubric.Weighted(terms...)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", f.path, err)
	}
	var tools []env.Tool
	for i, tc := range cfg.Tool {
		t, err := buildTool(dir, tc)
		if err != nil {
			f.src = readFileOrEmpty(f.path)
			return nil, fmt.Errorf("%s: [[tool]] %s: %w", f.atTable("tool", "name", i), tc.Name, err)
		}
		tools = append(tools, t)
	}
	return &customEnv{
		dir: dir, cfg: cfg, opts: o, system: a.String("system_prompt"), tmpl: tmpl, rb: rb, tools: tools,
		nTrain: a.Int("num_train_examples"), nEval: a.Int("num_eval_examples"),
	}, nil
}

func (e *customEnv) ID() string                            { return e.cfg.ID }
func (e *customEnv) Rubric() *rubric.Rubric                { return e.rb }
func (e *customEnv) NewEpisode(ex env.Example) env.Episode { return env.SingleTurnEpisode{} }

// Tools, MaxTurns and ReplyTokens are the [[tool]] tables' (none, 0 and
// the default room for an environment without tools).
func (e *customEnv) Tools() []env.Tool { return e.tools }
func (e *customEnv) MaxTurns() int     { return e.cfg.MaxTurns }
func (e *customEnv) ReplyTokens() int {
	if len(e.tools) > 0 {
		return env.ToolReplyTokens
	}
	return 0
}
func (e *customEnv) Examples(split string) ([]env.Example, error) {
	var i, n int
	switch split {
	case "train":
		i, n = 0, e.nTrain
	case "eval":
		i, n = 1, e.nEval
	default:
		return nil, env.SplitErr(e.cfg.ID, split)
	}
	e.once[i].Do(func() { e.cache[i], e.loadErr[i] = e.load(split) })
	if e.loadErr[i] != nil {
		return nil, e.loadErr[i]
	}
	return env.Limit(e.cache[i], n), nil
}

// load reads a split's rows and renders their prompts.
func (e *customEnv) load(split string) ([]env.Example, error) {
	d := e.cfg.Dataset
	var rows []env.Row
	var err error
	if d.Hub != "" {
		name := d.TrainSplit
		if split == "eval" {
			name = d.EvalSplit
		}
		rows, err = env.LoadHubRows(context.Background(), e.opts.Hub, d.Hub, d.Config, name)
	} else {
		file := d.Train
		if split == "eval" {
			file = d.Eval
		}
		if file == "" {
			return nil, fmt.Errorf("env %s: %w %q: [dataset] in %s has no eval file; add eval = \"test.jsonl\"",
				e.cfg.ID, env.ErrNoSplit, split, filepath.Join(e.dir, ConfigFile))
		}
		rows, err = env.LoadRowsAs(filepath.Join(e.dir, filepath.FromSlash(file)), d.Format)
	}
	if err != nil {
		return nil, err
	}
	out := make([]env.Example, 0, len(rows))
	var bad []string
	badCount := 0
	for i, r := range rows {
		q, err := e.tmpl.render(r)
		var a string
		if err == nil {
			if _, has := r.Fields[d.AnswerField]; has || d.AnswerField != "answer" {
				a, err = env.TextField(r, d.AnswerField)
			}
		}
		if err != nil {
			badCount++
			if len(bad) < env.MaxReported {
				bad = append(bad, err.Error())
			}
			continue
		}
		info := make(map[string]any, len(r.Fields))
		for k, v := range r.Fields {
			info[k] = v
		}
		out = append(out, env.Example{ID: strconv.Itoa(i), Prompt: env.ChatPrompt(e.system, q), Answer: a, Info: info})
	}
	if badCount > 0 {
		return nil, env.BadRowsError(bad, badCount, len(rows), "row")
	}
	return out, nil
}

// buildTerm makes one rubric term from its table. Comparison terms score
// the parsed final answer against the example's answer, 0 when the
// completion has no parsable answer.
func buildTerm(dir, parserKind string, parse answerParser, tc termConfig) (rubric.Term, error) {
	name := tc.Name
	if name == "" {
		name = tc.Type
	}
	weight := 1.0
	if tc.Weight != nil {
		weight = *tc.Weight
	}
	var timeout time.Duration
	if tc.Timeout != "" {
		d, err := time.ParseDuration(tc.Timeout)
		if err != nil || d <= 0 {
			return rubric.Term{}, fmt.Errorf("timeout %q is not a positive duration; write e.g. \"30s\"", tc.Timeout)
		}
		timeout = d
	}
	compare := func(match func(got, want string) float64) rubric.Func {
		return rubric.Reward(func(r rubric.Rollout) float64 {
			got, ok := lab.ParseLast(r, parse)
			if !ok {
				return 0
			}
			return match(got, r.Answer)
		})
	}
	boolScore := func(f func(a, b string) bool) func(a, b string) float64 {
		return func(a, b string) float64 {
			if f(a, b) {
				return 1
			}
			return 0
		}
	}
	var fn rubric.Func
	var err error
	switch tc.Type {
	case "exact":
		fn = compare(boolScore(rubric.ExactMatch))
	case "numeric":
		fn = compare(boolScore(rubric.NumericMatch))
	case "math":
		fn = compare(boolScore(rubric.MathEquivalent))
	case "ratio":
		fn = compare(rubric.Ratio)
	case "format":
		fn, err = formatTerm(parserKind, tc.Tags)
	case "command":
		fn, err = rubric.Command(rubric.CommandConfig{Argv: tc.Argv, Timeout: timeout, Dir: dir})
	case "http":
		fn, err = rubric.HTTP(rubric.HTTPConfig{URL: tc.URL, Timeout: timeout, Headers: tc.Headers})
	case "judge":
		jc := rubric.JudgeConfig{BaseURL: tc.BaseURL, Model: tc.Model, APIKeyEnv: tc.APIKeyEnv,
			Template: tc.Template, Timeout: timeout, MaxTokens: tc.MaxTokens}
		if jc.Chat, err = judgeEndpoint(dir, tc); err == nil {
			fn, err = rubric.Judge(jc)
		}
	case "":
		err = errors.New(`type is missing; use "exact", "numeric", "math", "ratio", "format", "command", "http" or "judge"`)
	default:
		err = fmt.Errorf(`type %q is unknown; use "exact", "numeric", "math", "ratio", "format", "command", "http" or "judge"`, tc.Type)
	}
	if err != nil {
		return rubric.Term{}, err
	}
	return rubric.Term{Name: name, Weight: weight, Func: fn}, nil
}

// formatTerm rewards the answer format the parser expects: the XML tags
// (the parser's tag unless tags are given), a \boxed{} or a "####".
func formatTerm(parserKind string, tags []string) (rubric.Func, error) {
	if len(tags) == 0 && strings.HasPrefix(parserKind, "xml:") {
		tags = []string{strings.TrimPrefix(parserKind, "xml:")}
	}
	if len(tags) > 0 {
		return rubric.FormatReward(tags...)
	}
	var has func(string) bool
	switch parserKind {
	case "boxed":
		has = func(t string) bool { _, ok := rubric.BoxedAnswer(t); return ok }
	case "hash":
		has = func(t string) bool { return strings.Contains(t, "####") }
	case "think":
		has = rubric.FollowsThinkFormat
	default:
		return nil, errors.New(`a format term with parser "none" needs tags = ["answer", ...]`)
	}
	return rubric.Reward(func(r rubric.Rollout) float64 {
		turns := r.AssistantTurns()
		if len(turns) == 0 {
			return 0
		}
		n := 0
		for _, t := range turns {
			if has(t) {
				n++
			}
		}
		return float64(n) / float64(len(turns))
	}), nil
}
