package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/rundir"
	"github.com/grpo-dev/grpo/trainer"
)

var runsFlags struct {
	dir    string
	follow bool
	poll   time.Duration
}

func init() {
	register(&command{
		name:    "runs",
		summary: "list training runs, show a run's status, print or follow its log",
		usage:   "list [--dir runs] | status RUN | logs RUN [--follow]",
		help: `Reads the run directories that grpo train writes (runs/<name>-<time>/ by
default). RUN is a run directory, or the name of one under --dir.

  grpo runs list                 one line per run, newest first: steps done of
                                 max_steps, last step's reward, last eval
                                 reward, status
  grpo runs status RUN           the config (model, envs, batch, LoRA, lr),
                                 rewards of the first and last 10% of steps,
                                 latest loss, grad_norm, kl, entropy, lr,
                                 checkpoints, adapter and plot paths
  grpo runs logs RUN             print log.txt
  grpo runs logs RUN --follow    and keep printing new lines until the run
                                 finishes, fails or is interrupted (Ctrl-C
                                 stops following, not the run)

Status: finished (the log's last line says so and adapter/ exists), failed
(the log ends with an error), interrupted (Ctrl-C: resume it with
grpo train --resume RUN), running (written to in the last 2 minutes), or
interrupted when it went silent without a last line (killed).

Examples:
  grpo runs list
  grpo runs list --dir experiments
  grpo runs status gsm8k-20250101-120000
  grpo runs logs runs/gsm8k-20250101-120000 --follow`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&runsFlags.dir, "dir", "runs", "directory holding the run directories")
			fs.BoolVar(&runsFlags.follow, "follow", false, "logs: keep printing new lines until the run ends")
			fs.BoolVar(&runsFlags.follow, "f", false, "same as --follow")
			fs.DurationVar(&runsFlags.poll, "poll", time.Second, "logs --follow: how often to look for new lines")
		},
		run: func(args []string) error { return runRuns(stdout, args) },
	})
}

func runRuns(w io.Writer, args []string) error {
	if len(args) == 0 {
		return usagef("runs needs a subcommand: list, status RUN or logs RUN")
	}
	sub, rest := args[0], args[1:]
	if sub == "list" {
		if len(rest) > 0 {
			return usagef("runs list takes no arguments; use --dir DIR for another runs directory")
		}
		return runsList(w, runsFlags.dir)
	}
	if sub != "status" && sub != "logs" {
		return usagef("unknown runs subcommand %q; use list, status or logs", sub)
	}
	if len(rest) != 1 {
		return usagef("runs %s takes one run directory or name (see grpo runs list)", sub)
	}
	path, err := rundir.Find(rest[0], runsFlags.dir, trainer.ReadRunConfig)
	if err != nil {
		return err
	}
	if sub == "status" {
		return runsStatus(w, path)
	}
	if !runsFlags.follow {
		f, err := os.Open(filepath.Join(path, "log.txt"))
		if err != nil {
			return fmt.Errorf("run %s: %w", path, err)
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	}
	if runsFlags.poll <= 0 {
		return usagef("--poll %s: want a positive interval, e.g. 1s", runsFlags.poll)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// A step of a large model can take minutes; follow until the run has
	// been silent for five times the running window before giving up.
	return rundir.FollowLog(ctx, path, w, runsFlags.poll, 5*rundir.RunningWindow)
}

func runsList(w io.Writer, dir string) error {
	runs, err := rundir.List(dir, time.Now(), trainer.ReadRunConfig)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		_, err := fmt.Fprintf(w, "no runs in %s; start one with grpo train CONFIG.toml (or pass --dir)\n", dir)
		return err
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTEPS\tREWARD\tEVAL REWARD\tSTATUS\tUPDATED")
	for _, r := range runs {
		steps := fmt.Sprint(r.Steps)
		if r.MaxSteps > 0 {
			steps += fmt.Sprintf("/%d", r.MaxSteps)
		}
		reward, eval := "-", "-"
		if r.HasReward {
			reward = fmt.Sprintf("%.4f", r.LastReward)
		}
		if r.HasEval {
			eval = fmt.Sprintf("%.4f (step %d)", r.LastEvalReward, r.EvalStep)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, steps, reward, eval, r.Status, r.Modified.Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

func runsStatus(w io.Writer, path string) error {
	d, err := rundir.InspectDetail(path, time.Now(), trainer.ReadRunConfig)
	if err != nil {
		return err
	}
	c, cfgErr := config.Load(filepath.Join(path, "config.toml"))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("run", "%s", d.Path)
	row("status", "%s (%s)", d.Status, d.Detail)
	if c != nil {
		row("model", "%s", c.Model)
		var envs []string
		for _, e := range c.Env {
			envs = append(envs, fmt.Sprintf("%s (weight %g)", e.ID, e.Weight))
		}
		row("envs", "%s", strings.Join(envs, ", "))
		row("batch", "%d rollouts/step, %d per example, max_tokens %d", c.BatchSize, c.RolloutsPerExample, c.Sampling.MaxTokens)
		row("lora", "rank %d, alpha %g, %s", c.LoRA.Rank, c.LoRA.Alpha, strings.Join(c.LoRA.TargetModules, ","))
		row("optimizer", "lr %g, %s schedule", c.Optimizer.LR, c.Optimizer.Schedule)
	} else {
		row("config", "unreadable: %v", cfgErr)
	}
	steps := fmt.Sprint(d.Steps)
	if d.MaxSteps > 0 {
		steps += fmt.Sprintf(" of %d", d.MaxSteps)
	}
	row("steps", "%s", steps)
	if d.Steps > 0 {
		row("reward, first 10% of steps", "%.4f", d.Summary.FirstReward)
		row("reward, last 10% of steps", "%.4f", d.Summary.LastReward)
		var keys []string
		for _, k := range []string{"loss", "grad_norm", "kl", "entropy", "lr"} {
			if v, ok := d.Latest[k]; ok {
				keys = append(keys, fmt.Sprintf("%s %.4g", k, v))
			}
		}
		row("latest step", "%s", strings.Join(keys, ", "))
	}
	if d.HasEval {
		row("eval reward", "%.4f (step %d)", d.LastEvalReward, d.EvalStep)
	}
	if len(d.Checkpoints) == 0 {
		row("checkpoints", "none")
	} else {
		row("checkpoints", "steps %s", strings.Join(numericOrder(d.Checkpoints), ", "))
	}
	row("adapter", "%s", orNone(d.Adapter))
	row("plot", "%s", orNone(d.Plot))
	return tw.Flush()
}

func numericOrder(xs []int) []string {
	s := append([]int(nil), xs...)
	sort.Ints(s)
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprint(x)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none yet"
	}
	return s
}
