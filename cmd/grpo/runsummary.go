package main

import (
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/grpo-dev/grpo/rundir"
	"github.com/grpo-dev/grpo/trainer"
)

// printRunSummary prints a finished run's table: reward at the start and
// end, the last eval, and where the results are.
func printRunSummary(res *trainer.Result) error {
	if res.RunDir == "" { // a rank other than 0: rank 0 reports the job
		return nil
	}
	s, err := rundir.Summarize(res.RunDir)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(w, "run\t%s\n", res.RunDir)
	fmt.Fprintf(w, "steps\t%d\n", s.Steps)
	fmt.Fprintf(w, "reward, first 10%% of steps\t%.3f\n", s.FirstReward)
	fmt.Fprintf(w, "reward, last 10%% of steps\t%.3f\n", s.LastReward)
	if s.HasEval {
		fmt.Fprintf(w, "eval reward (step %d)\t%.3f\n", s.EvalStep, s.EvalReward)
	}
	fmt.Fprintf(w, "adapter\t%s\n", res.Adapter)
	fmt.Fprintf(w, "plot\t%s\n", filepath.Join(res.RunDir, "rewards.png"))
	return w.Flush()
}
