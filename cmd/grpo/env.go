package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/grpo-dev/grpo/env"
	_ "github.com/grpo-dev/grpo/env/builtins" // registers every environment grpo ships
	"github.com/grpo-dev/grpo/env/custom"
	"github.com/grpo-dev/grpo/env/pyenv"
)

var envFlags struct {
	args  string
	force bool
}

func init() {
	register(&command{
		name:    "env",
		summary: "list, show and install environments (builtin and environment.toml directories)",
		usage:   "list | show ID [--args JSON] | score ID --input FILE.jsonl | install DIR|owner/name [--force]",
		help: `Environments pair a dataset with a harness and a rubric. Builtins: reverse-text,
alphabet-sort, gsm8k, wordle, math, wiki-search (primeintellect/ID names the same builtin).
Builtins read the Lab's hub datasets by default, through the HF cache; env show
says which, and the arg that selects data needing no network
(dataset_name = "synthetic" for reverse-text, alphabet-sort and math).

  grpo env list                      builtins and installed environments
  grpo env show gsm8k                description, args with types and defaults,
                                     split sizes and one sample prompt
  grpo env show wordle --args '{"num_guesses": 4}'
  grpo env install ./my-env          check and copy a directory to
                                     $GRPO_HOME/environments/<id> (~/.grpo by default)
` + envScoreHelp + `

A custom environment is a directory with environment.toml and its data:

  id = "my-org/capitals"
  description = "name the capital city"
  system_prompt = "Answer inside <answer> tags."
  prompt_template = "What is the capital of {country}?"   # {field} of a row
  parser = "xml:answer"            # xml:TAG | boxed | hash | think | none

  [dataset]                        # local files (relative paths) or hub = "org/name"
  train = "data/train.jsonl"       # .jsonl, .jsonl.gz or .parquet
  eval = "data/test.jsonl"
  question_field = "country"       # default "question"
  answer_field = "capital"         # default "answer"
  # hub = "openai/gsm8k"  config = "main"  train_split = "train"  eval_split = "test"

  [[rubric]]                       # weighted terms; reward = clamped sum
  type = "exact"                   # exact | numeric | math | ratio | format |
  weight = 0.9                     # command | http | judge
  [[rubric]]
  type = "format"
  weight = 0.1
  # command: argv = ["python3", "reward.py"], timeout = "30s" (run in the env dir)
  # http: url, timeout, headers    judge: base_url, model, api_key_env, template
  #   or judge: endpoint = "ID" (an endpoint_id of configs/endpoints.toml; endpoints_path for another file)

  max_turns = 6                    # (top level) with tools: model turns per episode, default 10
  [[tool]]                         # a function the model may call (OpenAI function schema)
  name = "atlas"
  description = "Look a country up."
  parameters = { type = "object", properties = { country = { type = "string" } }, required = ["country"] }
  url = "http://127.0.0.1:8000/atlas"   # POST the arguments as JSON; the reply body is the result
  timeout = "10s"                  # headers = { Authorization = "Bearer ${TOKEN}" }
  # command = ["python3", "tool.py"] instead of url: arguments on stdin, result on stdout, in the sandbox

  [agent]                          # instead of tools: your agent program plays each rollout, calling
  command = ["python3", "agent.py"]  # the policy at $OPENAI_BASE_URL; timeout = "10m", env, prompt_tokens (docs/agents.md)

Environments in ./environments/ of the workspace are found too.

Verifiers (Python) environments of both generations (v0 load_environment
packages, v1 Taskset packages), from the Environments Hub or your own, run
through grpo's bridge in grpo's own virtual environment ($GRPO_HOME/venv,
made with uv when it is on PATH, else python3 -m venv; a $GRPO_PYTHON that is
a venv's python is used instead); a config names them as the Lab does:

  grpo env install owner/name        installs the hub's package into that venv
                                     (nothing when it is installed already)
  grpo env install ./environments/my_env   pip install -e into that venv (a directory with pyproject.toml)
  [[env]]
  id = "owner/name"                  # or "./environments/my_env/my_env.py"
  args = { max_turns = 4 }           # passed to load_environment (or the taskset's config) as they are`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&envFlags.args, "args", "", `environment args as a JSON object, e.g. '{"seed": 1}' (show, score)`)
			fs.BoolVar(&envFlags.force, "force", false, "replace an installed environment of the same id (install)")
			addEnvScoreFlags(fs)
		},
		run: func(args []string) error { return runEnv(stdout, args) },
	})
}

func runEnv(w io.Writer, args []string) error {
	if len(args) == 0 {
		return usagef("env needs a subcommand: list, show ID, score ID or install DIR")
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "list":
		if len(rest) > 0 {
			return usagef("env list takes no arguments")
		}
		return envList(w)
	case "show", "score":
		if len(rest) != 1 {
			return usagef("env %s takes one environment id", sub)
		}
		var a map[string]any
		if envFlags.args != "" {
			if err := json.Unmarshal([]byte(envFlags.args), &a); err != nil {
				return usagef("--args %q is not a JSON object: %v", envFlags.args, err)
			}
		}
		if sub == "score" {
			return envScore(w, rest[0], a)
		}
		return envShow(w, rest[0], a)
	case "install":
		if len(rest) != 1 {
			return usagef("env install takes one directory, .py file or owner/name")
		}
		if pyenv.IsInstallTarget(rest[0]) {
			msg, err := pyenv.Install(context.Background(), rest[0], os.Stderr)
			if err != nil {
				return err
			}
			fmt.Fprintln(w, msg)
			return nil
		}
		dest, err := custom.Install(rest[0], envFlags.force)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "installed %s\n", dest)
		return nil
	default:
		return usagef("unknown env subcommand %q; use list, show, score or install", sub)
	}
}

func envList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSOURCE\tDESCRIPTION")
	for _, s := range env.List() {
		src := "builtin"
		if s.Dir != "" {
			src = s.Dir
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.ID, src, s.Description)
	}
	return tw.Flush()
}

func envShow(w io.Writer, id string, args map[string]any) error {
	s, ok := env.Lookup(id)
	if !ok {
		_, err := env.New(id, args) // the registry's error says why
		return err
	}
	e, err := env.New(id, args)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s\n  %s\n", s.ID, s.Description)
	if s.Data != "" {
		fmt.Fprintf(w, "  data: %s\n", s.Data)
	}
	if len(s.Aliases) > 0 {
		fmt.Fprintf(w, "  aliases: %s\n", strings.Join(s.Aliases, ", "))
	}
	if s.Dir != "" {
		fmt.Fprintf(w, "  directory: %s\n", s.Dir)
	}
	if len(s.Versions) > 0 {
		fmt.Fprintln(w, "  versions (select with version = \"...\" in [[env]], or id@version):")
		for i, v := range s.Versions {
			def := ""
			if i == 0 {
				def = ", the default"
			}
			hub := ""
			if len(v.Hub) > 0 {
				hub = "; Hub " + strings.Join(v.Hub, ", ")
			}
			scale := ""
			if sc := s.ScaleOf(v.Name); sc != 0 && sc != 1 {
				scale = fmt.Sprintf("; reward = verifiers' × 1/%g", 1/sc)
			}
			fmt.Fprintf(w, "    %s: %s%s%s%s\n", v.Name, v.About, def, hub, scale)
		}
	}
	if s.RewardScale != 0 && len(s.Versions) == 0 {
		fmt.Fprintf(w, "  reward scale: verifiers' weighted sum × 1/%g, to keep the reward in [0, 1]; the sub-metrics are verifiers' own, unscaled\n", 1/s.RewardScale)
	}
	fmt.Fprintln(w, "\nArgs:")
	if s.RawArgs {
		fmt.Fprintln(w, "  any: given as they are to the environment's load_environment")
	} else {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tTYPE\tDEFAULT\tHELP")
		for _, a := range s.Args {
			def, _ := json.Marshal(a.Default)
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", a.Name, a.Type, truncate(string(def), 40), a.Help)
		}
		tw.Flush()
	}
	showTools(w, e)
	fmt.Fprintln(w, "\nSplits:")
	var sample *env.Example
	for _, split := range []string{"train", "eval"} {
		exs, err := e.Examples(split)
		switch {
		case errors.Is(err, env.ErrNoSplit):
			fmt.Fprintf(w, "  %-5s none\n", split)
		case err != nil:
			fmt.Fprintf(w, "  %-5s unavailable: %v\n", split, err)
		default:
			fmt.Fprintf(w, "  %-5s %d examples\n", split, len(exs))
			if sample == nil && len(exs) > 0 {
				sample = &exs[0]
			}
		}
	}
	if sample != nil {
		fmt.Fprintln(w, "\nSample prompt:")
		for _, m := range sample.Prompt {
			fmt.Fprintf(w, "  [%s]\n%s\n", m.Role, indent(m.Content, "    "))
		}
		if sample.Answer != "" {
			fmt.Fprintf(w, "  [answer]\n%s\n", indent(truncate(sample.Answer, 300), "    "))
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre)
}
