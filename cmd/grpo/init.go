package main

import (
	"flag"
	"fmt"
	"path/filepath"

	"github.com/grpo-dev/grpo/workspace"
)

var initFlags struct{ force, legacy bool }

func init() {
	register(&command{
		name:    "init",
		summary: "write a workspace as prime lab setup does: configs/{rl,eval,gepa}, AGENTS.md, skills, .gitignore",
		usage:   "[DIR] [--force] [--legacy-configs]",
		help: `Writes what Prime Intellect Lab's workspace setup (prime lab setup) writes
today into DIR (default: the current directory), byte for byte (grpo's
examples/LAB_FILES.md names each file's source), and grpo's own files:

  configs/rl/{qwen,qwen-moe,llama,nemotron,gpt-oss}.toml      grpo train
  configs/eval/{qwen-3-5,qwen-3-5-moe,llama-3,nemotron-3,gpt-oss}.toml
                               grpo eval
  configs/gepa/{the same five}.toml                           grpo gepa run
                               (verifiers a60a606's model-family configs;
                               grpo models lists what it runs and how far)
  AGENTS.md, CLAUDE.md, environments/AGENTS.md, .prime/skills/
                               the Lab's guidance for coding agents
  .gitignore                   the Lab's ignores and runs/, appended to an
                               existing .gitignore
  configs/endpoints.toml       hosted models by endpoint_id (eval, GEPA)
  AGENTS.local.md              grpo's commands, layout and runs (the Lab's
                               AGENTS.md sends agents here next)
  environments/capitals/       a complete custom environment (grpo env show capitals)

--legacy-configs also writes the per-environment configs prime lab setup
wrote before (verifiers 8d4b33247), sized for one local GPU:
configs/rl/{alphabet-sort,gsm8k,math-python,reverse-text,wiki-search,wordle}.toml,
configs/eval/{minimal,multi-env}.toml, configs/gepa/{base,wordle}.toml.

Existing files are never overwritten unless --force is given; then every
file above is rewritten (others in DIR are left alone).

Examples:
  grpo init
  grpo init my-lab && cd my-lab && grpo eval configs/eval/llama-3.toml
  grpo init --legacy-configs && grpo train configs/rl/reverse-text.toml
  grpo init --force`,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&initFlags.force, "force", false, "overwrite the workspace files that exist already")
			fs.BoolVar(&initFlags.legacy, "legacy-configs", false, "also write the per-environment configs of verifiers 8d4b33247 (configs/rl/gsm8k.toml, ...)")
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
			written, err := workspace.Write(dir, workspace.Options{Force: initFlags.force, LegacyConfigs: initFlags.legacy})
			for _, p := range written {
				fmt.Fprintf(stdout, "wrote %s\n", p)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "\nnext: cd %s && grpo eval configs/eval/llama-3.toml   (then grpo train configs/rl/llama.toml)\n", filepath.Clean(dir))
			return nil
		},
	})
}
