package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/grpo-dev/grpo/env"
	"golang.org/x/term"
)

// grpo env score: the rubric of an environment on given completions, the
// Lab's "test the rubric independently". The scoring is env.Score; this
// file reads the rows and prints.

var envScoreFlags struct {
	input  string
	jsonl  bool
	replay bool
}

const envScoreHelp = `
  grpo env score ENV --input FILE.jsonl [--args JSON] [--replay] [--jsonl]
                                     score given completions with ENV's rubric
                                     and print reward and sub-metrics per row

Rows are JSON objects, either as env/testdata/verifiers_golden.jsonl writes
them (prompt and completion as chat messages, answer, info, args, name) or
simpler: {"completion": "<reversed_text>…</reversed_text>", "answer": "…"}, or
"completion": ["turn 1", "turn 2"] for scripted assistant turns, which the
environment's harness plays (wordle answers each guess). A completion that
already holds the environment's replies is scored as given, as verifiers
scores a saved rollout; --replay plays its assistant turns through the
harness instead and names the first reply that differs. A row's "args" lay
over --args; rows whose "env" names another environment are skipped.
Output: JSONL, one object per row, with "reward" (grpo's, in [0, 1]) and
"verifiers_reward" (verifiers' own weighted sum: reward ÷ the env's reward
scale, the same number where it has none); a table on a terminal.`

func addEnvScoreFlags(fs *flag.FlagSet) {
	fs.StringVar(&envScoreFlags.input, "input", "", "JSONL file of completions to score, - for stdin (score)")
	fs.BoolVar(&envScoreFlags.jsonl, "jsonl", false, "print JSONL even on a terminal (score)")
	fs.BoolVar(&envScoreFlags.replay, "replay", false, "play assistant turns through the harness even when replies are given (score)")
}

// scoredRow is one line of env score's JSONL output.
type scoredRow struct {
	Line int    `json:"line"`
	Name string `json:"name,omitempty"`
	env.ScoreResult
	scale float64 // the row's version's RewardScale
}

func envScore(w io.Writer, id string, baseArgs map[string]any) error {
	if envScoreFlags.input == "" {
		return usagef("env score needs --input FILE.jsonl (one completion per line)")
	}
	spec, ok := env.Lookup(id)
	if !ok {
		_, err := env.New(id, baseArgs) // the registry's error says why
		return err
	}
	in := io.Reader(os.Stdin)
	name := "stdin"
	if envScoreFlags.input != "-" {
		f, err := os.Open(envScoreFlags.input)
		if err != nil {
			return err
		}
		defer f.Close()
		in, name = f, envScoreFlags.input
	}
	built := map[string]env.Environment{}
	var rows []scoredRow
	skipped := 0
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 64<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		row, err := env.ParseScoreRow([]byte(text))
		if err != nil {
			return fmt.Errorf("%s:%d: %v", name, line, err)
		}
		if row.Env != "" {
			if other, ok := env.Lookup(row.Env); !ok || other.ID != spec.ID {
				skipped++
				continue
			}
		}
		version := row.Version
		if _, pinned := env.SplitVersion(id); pinned != "" && version != "" && version != pinned {
			return fmt.Errorf("%s:%d: the row's version %q differs from the %s the command names; drop one of them", name, line, version, id)
		} else if version == "" {
			version = pinned
		}
		e, err := scoreEnv(built, spec.ID, version, baseArgs, row.Args)
		if err != nil {
			return fmt.Errorf("%s:%d: %v", name, line, err)
		}
		res, err := env.Score(context.Background(), e, spec.ScaleOf(version), row, env.ScoreOptions{Replay: envScoreFlags.replay})
		if err != nil {
			return fmt.Errorf("%s:%d: %v", name, line, err)
		}
		rows = append(rows, scoredRow{Line: line, Name: row.Name, ScoreResult: res, scale: spec.ScaleOf(version)})
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	if skipped > 0 {
		fmt.Fprintf(os.Stderr, "grpo env score: skipped %d rows whose \"env\" is not %s\n", skipped, spec.ID)
	}
	if f, ok := w.(*os.File); ok && !envScoreFlags.jsonl && term.IsTerminal(int(f.Fd())) {
		return printScoreTable(w, rows)
	}
	enc := json.NewEncoder(w)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// scoreEnv builds the environment for a row's version and args (laid
// over --args), once per distinct pair.
func scoreEnv(built map[string]env.Environment, id, version string, base, own map[string]any) (env.Environment, error) {
	args := map[string]any{}
	for k, v := range base {
		args[k] = v
	}
	for k, v := range own {
		args[k] = v
	}
	js, _ := json.Marshal(args) // map keys marshal sorted: one key per set
	key := version + " " + string(js)
	if e, ok := built[key]; ok {
		return e, nil
	}
	e, err := env.New(id, args, env.WithVersion(version))
	if err != nil {
		return nil, err
	}
	built[key] = e
	return e, nil
}

func printScoreTable(w io.Writer, rows []scoredRow) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LINE\tNAME\tREWARD\tVERIFIERS\tTURNS\tMETRICS")
	sum, vsum := 0.0, 0.0
	for _, r := range rows {
		keys := make([]string, 0, len(r.Metrics))
		for k := range r.Metrics {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var ms []string
		for _, k := range keys {
			ms = append(ms, fmt.Sprintf("%s=%.4g", k, r.Metrics[k]))
		}
		if len(r.Errors) > 0 {
			ms = append(ms, "errors: "+strings.Join(r.Errors, "; "))
		}
		fmt.Fprintf(tw, "%d\t%s\t%.4f\t%.4f\t%d\t%s\n", r.Line, truncate(r.Name, 32), r.Reward, r.VerifiersReward, r.Turns, strings.Join(ms, " "))
		sum, vsum = sum+r.Reward, vsum+r.VerifiersReward
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := float64(len(rows)); n > 0 {
		fmt.Fprintf(w, "\nmean reward %.4f over %d rows (verifiers' scale: %.4f", sum/n, len(rows), vsum/n)
		scale := rows[0].scale
		for _, r := range rows {
			if r.scale != scale {
				scale = 0 // rows of versions scaled differently: no one factor
			}
		}
		if scale != 0 && scale != 1 {
			fmt.Fprintf(w, "; grpo's reward = verifiers' × %.4g", scale)
		}
		fmt.Fprintln(w, ")")
	}
	return nil
}
