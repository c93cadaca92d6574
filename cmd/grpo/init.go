package main

import (
	"flag"
	"fmt"
	"path/filepath"

	"github.com/grpo-dev/grpo/workspace"
)

var initFlags struct{ force bool }

func init() {
	register(&command{
		name:    "init",
		summary: "write a workspace as prime lab setup does: configs/{rl,eval,gepa}, endpoints.toml, environments/, AGENTS.md",
		usage:   "[DIR] [--force]",
		help: `Writes what Prime Intellect Lab's workspace setup (prime lab setup, verifiers
8d4b33247) writes, in its layout and keys, with models sized for one local GPU,
into DIR (default: the current directory):

  configs/endpoints.toml       hosted models by endpoint_id (eval, GEPA)
  configs/rl/{alphabet-sort,gsm8k,math-python,reverse-text,wiki-search,wordle}.toml
                               grpo train
  configs/eval/{minimal,multi-env}.toml                       grpo eval
  configs/gepa/{base,wordle}.toml
                               GEPA prompt optimisation in the Lab's format
                               (grpo does not run GEPA yet; Prime's tools do)
  environments/AGENTS.md       how to write and test an environment
  environments/capitals/       a complete custom environment (grpo env show capitals)
  AGENTS.md                    guidance for coding agents: commands, layout, runs

Existing files are never overwritten unless --force is given; then every
file above is rewritten (others in DIR are left alone).

Examples:
  grpo init
  grpo init my-lab && cd my-lab && grpo eval configs/eval/minimal.toml
  grpo init --force`,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&initFlags.force, "force", false, "overwrite the workspace files that exist already")
		},
		run: func(args []string) error {
			dir := "."
			switch len(args) {
			case 0:
			case 1:
				dir = args[0]
			default:
				return usagef("init takes at most one directory")
			}
			written, err := workspace.Write(dir, initFlags.force)
			for _, p := range written {
				fmt.Fprintf(stdout, "wrote %s\n", p)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "\nnext: cd %s && grpo eval configs/eval/minimal.toml   (then grpo train configs/rl/reverse-text.toml)\n", filepath.Clean(dir))
			return nil
		},
	})
}
