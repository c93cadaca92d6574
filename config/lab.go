package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/internal/tomlschema"
)

// resolveLab applies what a file's keys mean beyond their fields: Lab's
// aliases (learning_rate, lora_alpha, [checkpoints] interval, n_samples,
// eval_base_model), per-env defaults that depend on the env (weight 1,
// name = id, "id@version"), and the warnings for hosted-only keys.
// A conflict is added to l and the file's value kept.
func (c *Config) resolveLab(l *problems) {
	s := c.src
	if c.LearningRate != nil {
		if s.Has("optimizer.lr") && c.Optimizer.LR != *c.LearningRate {
			l.at(fmt.Sprintf("key \"learning_rate\": learning_rate = %v conflicts with [optimizer] lr = %v; keep one of them", *c.LearningRate, c.Optimizer.LR), "learning_rate")
		} else {
			c.Optimizer.LR = *c.LearningRate
		}
	}
	if c.LoRAAlpha != nil {
		if s.Has("lora.alpha") && c.LoRA.Alpha != *c.LoRAAlpha {
			l.at(fmt.Sprintf("key \"lora_alpha\": lora_alpha = %v conflicts with [lora] alpha = %v; keep one of them", *c.LoRAAlpha, c.LoRA.Alpha), "lora_alpha")
		} else {
			c.LoRA.Alpha = *c.LoRAAlpha
		}
	}
	if iv := c.Checkpoints.Interval; iv != nil {
		if s.Has("checkpoint.interval") && c.Checkpoint.Interval != *iv {
			l.at(fmt.Sprintf("key \"checkpoints.interval\": [checkpoints] interval = %d conflicts with [checkpoint] interval = %d; keep one of them", *iv, c.Checkpoint.Interval), "checkpoints.interval")
		} else {
			c.Checkpoint.Interval = *iv
		}
	}
	if n := c.Eval.NSamples; n != nil {
		if s.Has("eval.num_examples") && c.Eval.NumExamples != *n {
			l.at(fmt.Sprintf("key \"eval.n_samples\": n_samples = %d conflicts with num_examples = %d in [eval]; keep one of them", *n, c.Eval.NumExamples), "eval.n_samples")
		} else {
			c.Eval.NumExamples = *n
		}
	}
	if b := c.Eval.EvalBaseModel; b != nil {
		if s.Has("eval.skip_first_step") && c.Eval.SkipFirstStep == *b {
			l.at(fmt.Sprintf("key \"eval.eval_base_model\": eval_base_model = %v conflicts with skip_first_step = %v (it means the opposite); keep skip_first_step", *b, c.Eval.SkipFirstStep), "eval.eval_base_model")
		} else {
			c.Eval.SkipFirstStep = !*b
		}
	}
	for i := range c.Env {
		e := &c.Env[i]
		if !s.Has(fmt.Sprintf("env.%d.weight", i)) {
			e.Weight = 1
		}
		if !splitVersion(&e.ID, &e.Version) {
			l.at(fmt.Sprintf("[[env]] %d: id pins a version other than version = %q; keep one of them", i+1, e.Version), fmt.Sprintf("env.%d.version", i))
		}
		if e.Name == "" {
			e.Name = e.ID
		}
	}
	for i := range c.Eval.Env {
		e := &c.Eval.Env[i]
		if !splitVersion(&e.ID, &e.Version) {
			l.at(fmt.Sprintf("[[eval.env]] %d: id pins a version other than version = %q; keep one of them", i+1, e.Version), fmt.Sprintf("eval.env.%d.version", i))
		}
		if e.Name == "" {
			e.Name = e.ID
		}
	}
	c.resolveOffPolicy(l)
	warns := append(append(c.resolveLabFilters(l), c.resolveBuffer(l)...), c.asyncWarning()...)
	c.Warnings = c.ignoredKeys(warns)
}

// splitVersion moves a version out of "owner/name@version", as Lab's CLI
// does; it reports false when a version key says otherwise.
func splitVersion(id, version *string) bool {
	i := strings.LastIndex(*id, "@")
	if i < 0 {
		return true
	}
	pinned := (*id)[i+1:]
	*id = (*id)[:i]
	if *version == "" {
		*version = pinned
	}
	return *version == pinned
}

// warning is one line of Config.Warnings at its place in the file.
type warning struct {
	line, col int
	msg       string
}

// ignoredKeys lists, in file order, one warning per hosted-only key the
// file sets, with extra ones (the Lab filters grpo does not run).
func (c *Config) ignoredKeys(extra []warning) []string {
	type hit = warning
	hits := extra
	seen := map[string]bool{}
	for path, pos := range c.src.Pos {
		generic := tomlschema.GenericPath(path)
		info, ok := keyInfos[generic]
		if !ok || info.ignored == "" || seen[generic] {
			continue
		}
		// Report a table once, not each key inside it.
		if parent, ok := keyInfos[tomlschema.ParentPath(generic)]; ok && parent.ignored != "" {
			continue
		}
		seen[generic] = true
		shown := strings.ReplaceAll(generic, ".*", "[]")
		if tomlschema.KindName(schema.Type(strings.Split(generic, "."))) == "a table" {
			shown = "[" + shown + "]"
		}
		where := fmt.Sprintf("%s:%d", c.src.Name, pos.Line)
		if flag, ok := c.src.Flags[path]; ok {
			where, pos.Line, pos.Column = flag, 0, 0
		}
		msg := fmt.Sprintf("%s: accepted and ignored locally: %s because %s", where, shown, info.ignored)
		if info.deprecated != "" {
			// Say what prime lab doctor says of the key, so the file is
			// fixed for both.
			msg = fmt.Sprintf("%s: deprecated (prime lab doctor: %s); accepted and ignored locally because %s", where, info.deprecated, info.ignored)
		}
		hits = append(hits, hit{pos.Line, pos.Column, msg})
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].line != hits[j].line {
			return hits[i].line < hits[j].line
		}
		return hits[i].col < hits[j].col
	})
	var out []string
	for _, h := range hits {
		out = append(out, h.msg)
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
