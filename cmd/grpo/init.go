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
		summary: "write a workspace: configs/rl, configs/eval, configs/gepa, environments/, AGENTS.md",
		usage:   "[DIR] [--force]",
		help: `Writes the layout of a Prime Intellect Lab workspace (prime lab setup), with
configs that grpo runs as written, into DIR (default: the current directory):

  configs/rl/{alphabet-sort,gsm8k,reverse-text,wordle}.toml   grpo train
  configs/eval/{minimal,multi-env}.toml                       grpo eval
  configs/gepa/base.toml       GEPA prompt optimisation in Prime's format
                               (grpo does not run GEPA; Prime's tools do)
  environments/README.md       how to write an environment
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
