package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/kernels"
)

// Validate checks every setting's type-independent constraints (ranges,
// relations between keys) and returns the first violation as one line
// naming the key, its value and the fix, prefixed with file:line:col when
// the config came from a file.
func (c *Config) Validate() error {
	s := c.src
	bad := func(key, msg string, args ...any) error {
		return s.At(fmt.Sprintf(msg, args...), key)
	}
	switch {
	case strings.TrimSpace(c.Model) == "":
		return bad("model", `key "model" is missing: set model = "Qwen/Qwen3-0.6B" (a Hugging Face id or a local model directory) at the top of the file`)
	case c.MaxSteps < 1:
		return bad("max_steps", "max_steps = %d: must be at least 1, e.g. max_steps = 100", c.MaxSteps)
	case c.RolloutsPerExample < 2:
		return bad("rollouts_per_example", "rollouts_per_example = %d: GRPO compares the rollouts of one example, so it needs at least 2; e.g. rollouts_per_example = 8", c.RolloutsPerExample)
	case c.BatchSize < 1 || c.BatchSize%c.RolloutsPerExample != 0:
		return bad("batch_size", "batch_size = %d: must be a positive multiple of rollouts_per_example (%d), counting rollouts per step; e.g. batch_size = %d", c.BatchSize, c.RolloutsPerExample, 16*c.RolloutsPerExample)
	case checkDevice(c.Device) != nil:
		return bad("device", "%v", checkDevice(c.Device))
	case c.MicroBatchTokens < 1:
		return bad("micro_batch_tokens", "micro_batch_tokens = %d: must be at least 1, e.g. micro_batch_tokens = 8192", c.MicroBatchTokens)
	case c.MaxErrorSteps < 0:
		return bad("max_error_steps", "max_error_steps = %d: must be ≥ 0 (0 never stops), e.g. max_error_steps = 3", c.MaxErrorSteps)
	}
	if err := c.validateSampling(); err != nil {
		return err
	}
	if err := c.validateEnvs(); err != nil {
		return err
	}
	if err := c.validateEval(); err != nil {
		return err
	}
	if c.Wandb.On() && c.Wandb.Project == "" {
		return bad("wandb.enabled", `[wandb] enabled = true but project is empty; set project = "my-project"`)
	}
	ck := c.Checkpoint
	switch {
	case ck.Interval < 0:
		return bad("checkpoint.interval", "[checkpoint] interval = %d: must be ≥ 0 (0 saves only after the last step)", ck.Interval)
	case ck.KeepLast < 0:
		return bad("checkpoint.keep_last", "[checkpoint] keep_last = %d: must be ≥ 0 (0 keeps every checkpoint)", ck.KeepLast)
	case strings.TrimSpace(ck.Dir) == "":
		return bad("checkpoint.dir", `[checkpoint] dir is empty; set dir = "checkpoints" (relative to the run directory)`)
	case checkpointDirProblem(ck.Dir) != "":
		return bad("checkpoint.dir", "[checkpoint] dir = %q: %s", ck.Dir, checkpointDirProblem(ck.Dir))
	}
	if err := c.LoRA.Validate(); err != nil {
		return c.sectionError("lora", err)
	}
	if err := c.Loss.Validate(); err != nil {
		return c.sectionError("loss", err)
	}
	if err := c.Optimizer.Validate(); err != nil {
		return c.sectionError("optimizer", err)
	}
	if c.Optimizer.WarmupSteps > c.MaxSteps {
		return bad("optimizer.warmup_steps", "[optimizer] warmup_steps = %d exceeds max_steps = %d: the learning rate would never reach lr; lower warmup_steps", c.Optimizer.WarmupSteps, c.MaxSteps)
	}
	return nil
}

func (c *Config) validateSampling() error {
	s, src := c.Sampling, c.src
	// max_tokens is required here, where the sampler takes 0 as "no
	// per-turn cap": the loss and the KV cache are sized by it.
	switch {
	case s.MaxTokens == 0 && !src.Has("sampling.max_tokens"):
		return src.At(`key "sampling.max_tokens" is missing: set the longest completion in tokens under [sampling], e.g. max_tokens = 512`, "sampling")
	case s.MaxTokens < 1:
		return src.At(fmt.Sprintf("[sampling] max_tokens = %d: must be at least 1, e.g. max_tokens = 512", s.MaxTokens), "sampling.max_tokens")
	}
	if err := s.Params.Validate(); err != nil {
		return src.At("[sampling] "+err.Error(), "sampling."+paramKey(err))
	}
	switch {
	case s.ReasoningEffort != "" && s.ReasoningEffort != "low" && s.ReasoningEffort != "medium" && s.ReasoningEffort != "high":
		return src.At(fmt.Sprintf(`[sampling] reasoning_effort = %q: want "low", "medium" or "high"`, s.ReasoningEffort), "sampling.reasoning_effort")
	case s.EnableThinking != nil && s.ReasoningEffort != "":
		return src.At(`[sampling] enable_thinking and reasoning_effort cannot both be set (as on Lab); keep enable_thinking for Qwen3`, "sampling.reasoning_effort")
	}
	return nil
}

// paramKey is the key a sampling validation error is about: the
// validators of sampler.Params and kernels.SampleParams start every
// message with it ("top_p = 0: ...", "stop[1] is empty: ...").
func paramKey(err error) string {
	msg := err.Error()
	if i := strings.IndexFunc(msg, func(r rune) bool { return r != '_' && (r < 'a' || r > 'z') }); i >= 0 {
		return msg[:i]
	}
	return msg
}

// checkDevice accepts the device names kernels knows, built into this
// binary or not (opening an absent one says how to build it).
func checkDevice(name string) error {
	if _, ok := kernels.DescribeDevice(name); ok {
		return nil
	}
	names := kernels.Devices()
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	want := quoted[len(quoted)-1]
	if len(quoted) > 1 {
		want = strings.Join(quoted[:len(quoted)-1], ", ") + " or " + want
	}
	return fmt.Errorf("device = %q: want %s", name, want)
}

func (c *Config) validateEnvs() error {
	src := c.src
	if len(c.Env) == 0 {
		return src.At(`no [[env]] block: add at least one, e.g. [[env]] then id = "primeintellect/reverse-text" on the next line`)
	}
	sum := 0.0
	names := map[string]int{}
	for i, e := range c.Env {
		key := fmt.Sprintf("env.%d", i)
		if strings.TrimSpace(e.ID) == "" {
			return src.At(fmt.Sprintf(`key "env[%d].id" is missing: every [[env]] block needs id = "owner/name" or a builtin id`, i), key)
		}
		if !(e.Weight >= 0) || math.IsInf(e.Weight, 0) {
			return src.At(fmt.Sprintf("env[%d] (%s) weight = %v: must be a finite number ≥ 0 (the env's relative share of each batch)", i, e.ID, e.Weight), key+".weight", key)
		}
		if j, dup := names[e.Name]; dup {
			return src.At(fmt.Sprintf(`env[%d] and env[%d] are both named %q: give one a distinct name = "..." so their metrics stay apart`, j, i, e.Name), key+".name", key)
		}
		names[e.Name] = i
		sum += e.Weight
	}
	if !(sum > 0) {
		return src.At("[[env]] weights sum to 0: give at least one env a positive weight (weights are relative; the default is 1)", "env.0.weight", "env")
	}
	return nil
}

func (c *Config) validateEval() error {
	e, src := c.Eval, c.src
	switch {
	case e.Interval < 0:
		return src.At(fmt.Sprintf("[eval] interval = %d: must be ≥ 0 (0 turns periodic eval off)", e.Interval), "eval.interval")
	case e.NumExamples < -1 || e.NumExamples == 0:
		return src.At(fmt.Sprintf("[eval] num_examples = %d: want -1 (all) or a positive count", e.NumExamples), "eval.num_examples", "eval.n_samples")
	case e.RolloutsPerExample < 1:
		return src.At(fmt.Sprintf("[eval] rollouts_per_example = %d: must be at least 1", e.RolloutsPerExample), "eval.rollouts_per_example")
	case e.Sampling.MaxTokens < 0:
		return src.At(fmt.Sprintf("[eval.sampling] max_tokens = %d: must be ≥ 1, or left out to use [sampling]'s", e.Sampling.MaxTokens), "eval.sampling.max_tokens")
	}
	p := c.Sampling.Params
	e.Sampling.Apply(&p)
	if err := p.Validate(); err != nil {
		return src.At("[eval.sampling] "+err.Error(), "eval.sampling."+paramKey(err))
	}
	for i, ev := range e.Env {
		key := fmt.Sprintf("eval.env.%d", i)
		if strings.TrimSpace(ev.ID) == "" {
			return src.At(fmt.Sprintf(`key "eval.env[%d].id" is missing: every [[eval.env]] block needs an id`, i), key)
		}
		if n := ev.NumExamples; n != nil && (*n < -1 || *n == 0) {
			return src.At(fmt.Sprintf("eval.env[%d] num_examples = %d: want -1 (all) or a positive count", i, *n), key+".num_examples")
		}
		if r := ev.RolloutsPerExample; r != nil && *r < 1 {
			return src.At(fmt.Sprintf("eval.env[%d] rollouts_per_example = %d: must be at least 1", i, *r), key+".rollouts_per_example")
		}
	}
	return nil
}

// The section validators of lora, loss.Config and Optimizer name the
// key in their message ("lora.rank = 0: ...", "[loss] epsilon = ...");
// sectionKey finds it so the error can point at its line.
var sectionKey = regexp.MustCompile(`^(?:\[\w+\] |\w+\.)(\w+)`)

func (c *Config) sectionError(section string, err error) error {
	var paths []string
	if m := sectionKey.FindStringSubmatch(err.Error()); m != nil {
		paths = append(paths, section+"."+m[1])
	}
	paths = append(paths, section)
	return c.src.At(err.Error(), paths...)
}

// EnvChecker checks one environment id and its args, as an environment
// registry does (unknown id, unknown or ill-typed arg), returning an error
// that names the id or arg and the fix. An error about one arg may
// implement ArgName() string (errors.As finds it) so that the message
// points at that arg's line.
type EnvChecker func(id string, args map[string]any) error

type argNamer interface{ ArgName() string }

// envError locates a checker's error at the arg it names, else at the id.
func (c *Config) envError(label, block string, id string, err error) error {
	paths := []string{block + ".id", block}
	var an argNamer
	if errors.As(err, &an) {
		paths = append([]string{block + ".args." + an.ArgName()}, paths...)
	}
	return c.src.At(fmt.Sprintf("%s id = %q: %v", label, id, err), paths...)
}

// ValidateEnvs runs check on every [[env]] and [[eval.env]] block and
// returns the first failure located at its block.
//
// Hook for package env's registry: once env exports its lookup and args
// validation, the CLI (or a trainer.New step) passes it here; until then
// callers pass their own checker.
func (c *Config) ValidateEnvs(check EnvChecker) error {
	if check == nil {
		return nil
	}
	for i, e := range c.Env {
		if err := check(e.ID, e.Args); err != nil {
			return c.envError(fmt.Sprintf("env[%d]", i), fmt.Sprintf("env.%d", i), e.ID, err)
		}
	}
	for i, e := range c.Eval.Env {
		if err := check(e.ID, e.Args); err != nil {
			return c.envError(fmt.Sprintf("eval.env[%d]", i), fmt.Sprintf("eval.env.%d", i), e.ID, err)
		}
	}
	return nil
}
