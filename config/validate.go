package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// Validate checks every setting's type-independent constraints (ranges,
// relations between keys) and returns every violation (Problems), each
// one line naming the key, its value and the fix, prefixed with
// file:line:col when the config came from a file.
func (c *Config) Validate() error {
	l := &problems{src: c.src}
	c.check(l)
	return l.err()
}

// check adds every violation to l. Checks are independent of each other
// except where one key's check needs another's value to be sane (batch_size
// against rollouts_per_example).
func (c *Config) check(l *problems) {
	bad := func(key, msg string, args ...any) { l.at(fmt.Sprintf(msg, args...), key) }
	if strings.TrimSpace(c.Model) == "" {
		bad("model", `key "model" is missing: set model = "Qwen/Qwen3-0.6B" (a Hugging Face id or a local model directory) at the top of the file`)
	} else if _, err := os.Stat(c.Model); err != nil {
		// A hub id of a family grpo cannot run fails here, not after
		// its download.
		if err := model.CheckHubID(c.Model); err != nil {
			bad("model", "model = %q: %v; pick a model of a supported family, e.g. model = \"meta-llama/Llama-3.2-1B-Instruct\"", c.Model, err)
		}
	}
	if c.MaxSteps < 1 {
		bad("max_steps", "max_steps = %d: must be at least 1, e.g. max_steps = 100", c.MaxSteps)
	}
	if c.RolloutsPerExample < 2 {
		bad("rollouts_per_example", "rollouts_per_example = %d: GRPO compares the rollouts of one example, so it needs at least 2; e.g. rollouts_per_example = 8", c.RolloutsPerExample)
	} else if c.BatchSize < 1 || c.BatchSize%c.RolloutsPerExample != 0 {
		bad("batch_size", "batch_size = %d: must be a positive multiple of rollouts_per_example (%d), counting rollouts per step; e.g. batch_size = %d", c.BatchSize, c.RolloutsPerExample, 16*c.RolloutsPerExample)
	}
	if err := checkDevice(c.Device); err != nil {
		bad("device", "%v", err)
	} else if ids, err := c.DeviceList(); err != nil {
		bad("devices", "%v", err)
	} else if msg := checkExpertParallel(c.ExpertParallel, len(ids)); msg != "" {
		bad("expert_parallel", "%s", msg)
	}
	if c.MicroBatchTokens < 1 {
		bad("micro_batch_tokens", "micro_batch_tokens = %d: must be at least 1, e.g. micro_batch_tokens = 8192", c.MicroBatchTokens)
	}
	if err := CheckRecompute(c.Recompute); err != nil {
		bad("recompute", "%v", err)
	}
	if c.MaxErrorSteps < 0 {
		bad("max_error_steps", "max_error_steps = %d: must be ≥ 0 (0 never stops), e.g. max_error_steps = 3", c.MaxErrorSteps)
	}
	c.checkSampling(l)
	c.checkInference(l)
	c.checkAsync(l)
	c.checkEnvs(l)
	c.checkEval(l)
	if c.Wandb.On() && c.Wandb.Project == "" {
		bad("wandb.enabled", `[wandb] enabled = true but project is empty; set project = "my-project"`)
	}
	ck := c.Checkpoint
	if ck.Interval < 0 {
		bad("checkpoint.interval", "[checkpoint] interval = %d: must be ≥ 0 (0 saves only after the last step)", ck.Interval)
	}
	if ck.KeepLast < 0 {
		bad("checkpoint.keep_last", "[checkpoint] keep_last = %d: must be ≥ 0 (0 keeps every checkpoint)", ck.KeepLast)
	}
	if strings.TrimSpace(ck.Dir) == "" {
		bad("checkpoint.dir", `[checkpoint] dir is empty; set dir = "checkpoints" (relative to the run directory)`)
	} else if p := checkpointDirProblem(ck.Dir); p != "" {
		bad("checkpoint.dir", "[checkpoint] dir = %q: %s", ck.Dir, p)
	}
	if err := c.LoRA.Validate(); err != nil {
		c.sectionError(l, "lora", err)
	}
	for _, err := range c.Loss.Problems() {
		c.sectionError(l, "loss", err)
	}
	for _, err := range c.Buffer.Problems() {
		c.sectionError(l, "buffer", err)
	}
	if err := c.Optimizer.Validate(); err != nil {
		c.sectionError(l, "optimizer", err)
	}
	if c.Optimizer.WarmupSteps > c.MaxSteps && c.MaxSteps >= 1 {
		bad("optimizer.warmup_steps", "[optimizer] warmup_steps = %d exceeds max_steps = %d: the learning rate would never reach lr; lower warmup_steps", c.Optimizer.WarmupSteps, c.MaxSteps)
	}
}

func (c *Config) checkSampling(l *problems) {
	s := c.Sampling
	// A file may leave max_tokens out (DefaultMaxTokens applies); 0 or
	// less is an error here, where the sampler would take 0 as "no
	// per-turn cap": the loss and the KV cache are sized by it.
	if s.MaxTokens < 1 {
		l.at(fmt.Sprintf("[sampling] max_tokens = %d: must be at least 1, e.g. max_tokens = %d", s.MaxTokens, DefaultMaxTokens), "sampling.max_tokens", "sampling")
	} else if err := s.Params.Validate(); err != nil {
		l.at("[sampling] "+err.Error(), "sampling."+paramKey(err))
	}
	switch {
	case chat.CheckReasoningEffort(s.ReasoningEffort) != nil:
		l.at("[sampling] "+chat.CheckReasoningEffort(s.ReasoningEffort).Error(), "sampling.reasoning_effort")
	case s.EnableThinking != nil && s.ReasoningEffort != "":
		l.at(`[sampling] enable_thinking and reasoning_effort cannot both be set (as on Lab); keep enable_thinking for Qwen3`, "sampling.reasoning_effort")
	}
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
// RecomputeAuto is the recompute setting that leaves the policy to the
// memory estimate.
const RecomputeAuto = "auto"

// CheckRecompute checks a recompute setting: "auto", a policy name, or
// "layer:K" (model.ParseRecomputeSetting).
func CheckRecompute(setting string) error {
	if setting == RecomputeAuto {
		return nil
	}
	if _, _, err := model.ParseRecomputeSetting(setting); err == nil {
		return nil
	}
	names := append([]string{RecomputeAuto}, model.RecomputeNames()...)
	for i, n := range names {
		names[i] = strconv.Quote(n)
	}
	return fmt.Errorf(`recompute = %q: want one of %s, or "layer:K" to checkpoint the last K layers only ("selective+layer:K": the others under selective); e.g. recompute = "layer" for the least activation memory`, setting, strings.Join(names, ", "))
}

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

func (c *Config) checkEnvs(l *problems) {
	if len(c.Env) == 0 {
		l.at(`no [[env]] block: add at least one, e.g. [[env]] then id = "primeintellect/reverse-text" on the next line`)
		return
	}
	sum := 0.0
	names := map[string]int{}
	for i, e := range c.Env {
		key := fmt.Sprintf("env.%d", i)
		if strings.TrimSpace(e.ID) == "" {
			l.at(fmt.Sprintf(`key "env[%d].id" is missing: every [[env]] block needs id = "owner/name" or a builtin id`, i), key)
		}
		if !(e.Weight >= 0) || math.IsInf(e.Weight, 0) {
			l.at(fmt.Sprintf("env[%d] (%s) weight = %v: must be a finite number ≥ 0 (the env's relative share of each batch)", i, e.ID, e.Weight), key+".weight", key)
		} else {
			sum += e.Weight
		}
		if j, dup := names[e.Name]; dup {
			l.at(fmt.Sprintf(`env[%d] and env[%d] are both named %q: give one a distinct name = "..." so their metrics stay apart`, j, i, e.Name), key+".name", key)
		}
		names[e.Name] = i
	}
	if !(sum > 0) && allWeightsValid(c.Env) {
		l.at("[[env]] weights sum to 0: give at least one env a positive weight (weights are relative; the default is 1)", "env.0.weight", "env")
	}
}

// allWeightsValid: a zero sum is its own problem only when no weight was
// reported as invalid already.
func allWeightsValid(envs []Env) bool {
	for _, e := range envs {
		if !(e.Weight >= 0) || math.IsInf(e.Weight, 0) {
			return false
		}
	}
	return true
}

func (c *Config) checkEval(l *problems) {
	e := c.Eval
	if e.Interval < 0 {
		l.at(fmt.Sprintf("[eval] interval = %d: must be ≥ 0 (0 turns periodic eval off)", e.Interval), "eval.interval")
	}
	if e.NumExamples < -1 || e.NumExamples == 0 {
		l.at(fmt.Sprintf("[eval] num_examples = %d: want -1 (all) or a positive count", e.NumExamples), "eval.num_examples", "eval.n_samples")
	}
	if e.RolloutsPerExample < 1 {
		l.at(fmt.Sprintf("[eval] rollouts_per_example = %d: must be at least 1", e.RolloutsPerExample), "eval.rollouts_per_example")
	}
	if err := chat.CheckReasoningEffort(e.Sampling.ReasoningEffort); err != nil {
		l.at("[eval.sampling] "+err.Error(), "eval.sampling.reasoning_effort")
	}
	if e.Sampling.MaxTokens < 0 {
		l.at(fmt.Sprintf("[eval.sampling] max_tokens = %d: must be ≥ 1, or left out to use [sampling]'s", e.Sampling.MaxTokens), "eval.sampling.max_tokens")
	} else if c.Sampling.Params.Validate() == nil {
		// Only [eval.sampling]'s own overrides can fail here once
		// [sampling] passed; its own problems are reported there.
		p := c.Sampling.Params
		e.Sampling.Overrides().Apply(&p)
		if err := p.Validate(); err != nil {
			l.at("[eval.sampling] "+err.Error(), "eval.sampling."+paramKey(err))
		}
	}
	for i, ev := range e.Env {
		key := fmt.Sprintf("eval.env.%d", i)
		if strings.TrimSpace(ev.ID) == "" {
			l.at(fmt.Sprintf(`key "eval.env[%d].id" is missing: every [[eval.env]] block needs an id`, i), key)
		}
		if n := ev.NumExamples; n != nil && (*n < -1 || *n == 0) {
			l.at(fmt.Sprintf("eval.env[%d] num_examples = %d: want -1 (all) or a positive count", i, *n), key+".num_examples")
		}
		if r := ev.RolloutsPerExample; r != nil && *r < 1 {
			l.at(fmt.Sprintf("eval.env[%d] rollouts_per_example = %d: must be at least 1", i, *r), key+".rollouts_per_example")
		}
	}
}

// The section validators of lora, loss.Config and optim.Config name the
// key in their message ("lora.rank = 0: ...", "[loss] epsilon = ...");
// sectionKey finds it so the error can point at its line.
var sectionKey = regexp.MustCompile(`^(?:\[\w+\] |\w+\.)(\w+)`)

func (c *Config) sectionError(l *problems, section string, err error) {
	var paths []string
	if m := sectionKey.FindStringSubmatch(err.Error()); m != nil {
		paths = append(paths, section+"."+m[1])
	}
	paths = append(paths, section)
	l.at(err.Error(), paths...)
}

// EnvChecker checks one environment id and its args, as an environment
// registry does (unknown id, unknown or ill-typed arg), returning an error
// that names the id or arg and the fix. An error about one arg may
// implement ArgName() string (errors.As finds it) so that the message
// points at that arg's line.
type EnvChecker func(id string, args map[string]any) error

type argNamer interface{ ArgName() string }

// envError locates a checker's error at the arg it names, else at the id.
func (c *Config) envError(l *problems, label, block string, id string, err error) {
	paths := []string{block + ".id", block}
	var an argNamer
	if errors.As(err, &an) {
		paths = append([]string{block + ".args." + an.ArgName()}, paths...)
	}
	l.at(fmt.Sprintf("%s id = %q: %v", label, id, err), paths...)
}

// ValidateEnvs runs check (env.Check, or a program's own) on every
// [[env]] and [[eval.env]] block and returns every failure (Problems),
// each located at its block. Blocks without an id are left to Validate.
func (c *Config) ValidateEnvs(check EnvChecker) error {
	l := &problems{src: c.src}
	c.checkEnvIDs(l, check)
	return l.err()
}

func (c *Config) checkEnvIDs(l *problems, check EnvChecker) {
	if check == nil {
		return
	}
	for i, e := range c.Env {
		if strings.TrimSpace(e.ID) == "" {
			continue
		}
		if err := check(e.Ref(), e.Args); err != nil {
			c.envError(l, fmt.Sprintf("env[%d]", i), fmt.Sprintf("env.%d", i), e.Ref(), err)
		}
	}
	for i, e := range c.Eval.Env {
		if strings.TrimSpace(e.ID) == "" {
			continue
		}
		if err := check(e.Ref(), e.Args); err != nil {
			c.envError(l, fmt.Sprintf("eval.env[%d]", i), fmt.Sprintf("eval.env.%d", i), e.Ref(), err)
		}
	}
}
