package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/gepa"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

type gepaOptions struct {
	output, endpointsPath, device string
	maxCalls, teacherMaxTokens    int
	noThinking, quiet             bool
}

var gepaFlags gepaOptions

func init() {
	register(&command{
		name:    "gepa",
		summary: "GEPA prompt optimisation: a teacher model evolves an environment's system prompt",
		usage:   "run CONFIG.toml [--output DIR] [--endpoints FILE] [--max-calls N] [flags]",
		help: `grpo gepa run CONFIG optimises the system prompt of one environment with
GEPA (Agrawal et al. 2025, "Reflective Prompt Evolution Can Outperform
Reinforcement Learning"). The student (model) plays the environment's train
and validation examples; the teacher (reflection_model) reads the student's
traces on a minibatch (inputs, outputs, the rubric's feedback) and writes a
new instruction. A new prompt is kept when it beats its parent on that
minibatch, then scored on the whole validation set; parents are drawn among
the prompts that are best on some validation example (the Pareto front),
weighted by how many. [gepa] max_calls bounds the rollouts scored.

CONFIG is a configs/gepa/*.toml file in verifiers' layout (env_id or [env]
or one [[env]]; reflection_model, endpoints_path, [gepa] max_calls,
num_train, num_val, minibatch_size, perfect_score, state_columns,
max_concurrent, seed, use_merge, max_merge_invocations; [execution] or
[sampling]) or the seed's (environment, teacher_model, generations,
population_size, n_eval_samples); docs/gepa.md has the mapping. model and
reflection_model are endpoint ids of endpoints_path (or --endpoints, or
configs/endpoints.toml when it exists): hosted models, grpo serve, vLLM;
or models loaded here (a directory or hub id; model may add adapter = DIR).

The run directory (default runs/gepa-<config name>) gets:
  system_prompt.txt      the best prompt by mean validation score
  results.jsonl          one row per iteration: parent(s), minibatch, scores,
                         accepted or why not, calls spent, best so far
  pareto_frontier.jsonl  per validation example: the best score and the
                         prompts that reach it
  metadata.json          settings, budget spent, every candidate with its
                         lineage and scores
  best_score.png         the best validation score after each iteration
  gepa_state.json        the state, saved after every iteration
Running the same command again resumes a killed or stopped run from its last
iteration (a larger --max-calls continues a finished one); creating the file
gepa.stop in the run directory ends the run cleanly after the iteration in
progress. The result feeds grpo train and grpo eval through the
environment's system_prompt argument:
  [[env]]
  id = "reverse-text"
  args = { system_prompt = "<the text of system_prompt.txt>" }
  grpo eval reverse-text -m MODEL --args "{\"system_prompt\": $(jq -Rs . runs/gepa-x/system_prompt.txt)}"

Examples:
  grpo gepa run configs/gepa/llama-3.toml
  grpo gepa run configs/gepa/base.toml --output runs/gepa-wiki --max-calls 1000   # grpo init --legacy-configs
  touch runs/gepa-wiki/gepa.stop      # stop it cleanly; rerun to go on`,
		flags: func(fs *flag.FlagSet) {
			f := &gepaFlags
			*f = gepaOptions{}
			fs.StringVar(&f.output, "output", "", "run directory (default runs/gepa-<config name>); an existing run there is resumed")
			fs.StringVar(&f.endpointsPath, "endpoints", "", "endpoints.toml for model names when the config has no endpoints_path (default configs/endpoints.toml when it exists)")
			fs.IntVar(&f.maxCalls, "max-calls", 0, "budget of metric calls (rollouts scored), replacing the config's max_calls")
			fs.IntVar(&f.teacherMaxTokens, "teacher-max-tokens", 1024, "longest teacher reply, in tokens")
			fs.BoolVar(&f.noThinking, "no-thinking", false, "pass enable_thinking=false to the chat templates (Qwen3)")
			fs.BoolVar(&f.quiet, "quiet", false, "no progress bar or per-iteration lines")
			deviceFlag(fs, &f.device)
		},
		run: runGEPA,
	})
}

func runGEPA(args []string) error {
	f := &gepaFlags
	if len(args) == 0 || args[0] != "run" {
		return usagef("the subcommand is run: grpo gepa run CONFIG.toml")
	}
	if len(args) != 2 {
		return usagef("give one GEPA config file: grpo gepa run configs/gepa/wordle.toml")
	}
	switch {
	case f.maxCalls < 0:
		return usagef("--max-calls %d: want a positive budget (0: the config's max_calls)", f.maxCalls)
	case f.teacherMaxTokens < 1:
		return usagef("--teacher-max-tokens %d: want at least 1", f.teacherMaxTokens)
	}
	path := args[1]
	g, err := config.LoadGEPA(path)
	if err != nil {
		return err
	}
	for _, w := range g.Warnings {
		fmt.Fprintln(os.Stderr, "warning:", w)
	}
	if err := g.ValidateEnv(env.Check); err != nil {
		return err
	}
	out := f.output
	if out == "" {
		out = filepath.Join("runs", "gepa-"+strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	}
	reg, err := endpoints.LoadOrDefault(f.endpointsPath)
	if err != nil {
		return fmt.Errorf("--endpoints: %w", err)
	}
	var thinking *bool
	if f.noThinking {
		off := false
		thinking = &off
	}
	ctx, stop := interruptContext()
	defer stop()
	bar := newGEPAProgress(os.Stderr, f.quiet)
	res, err := gepa.RunConfig(ctx, g, gepa.ConfigOptions{
		ConfigPath: path, Dir: out, Endpoints: reg, Device: f.device, EnableThinking: thinking,
		TeacherMaxTokens: f.teacherMaxTokens, MaxCalls: f.maxCalls, Download: newDownloadProgress(os.Stderr),
		Notes:       func(s string) { fmt.Fprintln(os.Stderr, "warning:", s) },
		OnIteration: bar.iteration,
	})
	bar.finish()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted (%v); the run stopped after its last saved iteration: run the same command to resume it from %s", context.Cause(ctx), out)
		}
		return err
	}
	how := "stopped: " + res.StopReason
	if res.StopReason == gepa.StopBudget {
		how = "the budget is spent (a larger --max-calls goes on)"
	}
	fmt.Fprintf(stdout, "iterations %d, calls %d, candidates %d; %s\n", res.Iterations, res.Calls, len(res.Pool), how)
	fmt.Fprintf(stdout, "seed prompt: validation %.4f\nbest prompt: #%d, validation %.4f\n", res.Pool[0].Mean(), res.Best.ID, res.Best.Mean())
	fmt.Fprintf(stdout, "%s\n", filepath.Join(out, gepa.PromptFile))
	return nil
}

// gepaProgress is a bar over the metric-call budget on a terminal, one
// line per iteration elsewhere.
type gepaProgress struct {
	w     io.Writer
	tty   bool
	quiet bool
	bar   *progressbar.ProgressBar
}

func newGEPAProgress(w *os.File, quiet bool) *gepaProgress {
	return &gepaProgress{w: w, tty: term.IsTerminal(int(w.Fd())), quiet: quiet}
}

func (p *gepaProgress) iteration(pr gepa.Progress) {
	if p.quiet {
		return
	}
	r := pr.Record
	desc := fmt.Sprintf("gepa it %d: best #%d %.3f, %d candidates", pr.Iteration, pr.BestID, pr.BestScore, pr.Candidates)
	if !p.tty {
		what := r.Kind
		switch {
		case r.Kind == "seed":
			what = fmt.Sprintf("seed prompt validated: %.4f", r.ValScore)
		case r.Accepted:
			what = fmt.Sprintf("%s of %v accepted as #%d (validation %.4f)", r.Kind, r.Parents, *r.Candidate, r.ValScore)
		case r.Reason != "":
			what = fmt.Sprintf("%s of %v: %s", r.Kind, r.Parents, r.Reason)
		}
		fmt.Fprintf(p.w, "gepa iteration %d: %s; calls %d/%d; best #%d %.4f\n", pr.Iteration, what, pr.Calls, pr.MaxCalls, pr.BestID, pr.BestScore)
		return
	}
	if p.bar == nil {
		p.bar = progressbar.NewOptions(pr.MaxCalls,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetWidth(24),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	p.bar.Describe(desc)
	p.bar.Set(pr.Calls)
}

func (p *gepaProgress) finish() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}
