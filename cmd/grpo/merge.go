package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

func init() {
	var modelArg, adapterDir, outDir string
	register(&command{
		name:    "merge",
		summary: "merge a LoRA adapter into its base model and write a Hugging Face model directory",
		usage:   "--model DIR --adapter DIR --out DIR",
		help: `Writes --out as a copy of the base model (config.json, tokenizer and other
files copied; weights in their original dtype and shard layout) in which every
adapted projection weight W is replaced by W + scale·B·A, computed in float64
and rounded to nearest even into the source dtype (bf16 stays bf16). The
result loads in transformers, vLLM or grpo without the adapter.

--adapter is a PEFT LoRA adapter directory (adapter_config.json and
adapter_model.safetensors), as grpo train, PEFT or prime-rl write it.
--out must not exist or be empty; it is written atomically.

Example:
  grpo merge --model Qwen/Qwen3-0.6B --adapter runs/gsm8k/adapter --out merged/qwen3-gsm8k`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&modelArg, "model", "", "base model directory or hub id (required)")
			fs.StringVar(&adapterDir, "adapter", "", "PEFT LoRA adapter directory (required)")
			fs.StringVar(&outDir, "out", "", "output model directory; must not exist or be empty (required)")
		},
		run: func(args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			if adapterDir == "" {
				return usagef("--adapter is required: a PEFT adapter directory")
			}
			if outDir == "" {
				return usagef("--out is required: the directory to write the merged model to")
			}
			dir, err := resolveModelDir(modelArg)
			if err != nil {
				return err
			}
			// The adapter is only read on the host here, so the CPU
			// backend holds it whatever --device other commands use.
			be, err := loader.OpenBackend("cpu")
			if err != nil {
				return err
			}
			cfg, err := model.LoadConfig(dir)
			if err != nil {
				return err
			}
			// Shapes suffice to validate the adapter; no base weights are loaded.
			a, err := lora.Load(adapterDir, &model.Model{Config: cfg, Backend: be})
			if err != nil {
				return err
			}
			defer a.Free()
			if err := lora.WriteMerged(outDir, dir, a); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "merged %d adapted projections (%s, r=%d) into %s\n", len(a.Params())/2, strings.Join(a.Config.TargetModules, ","), a.Config.Rank, outDir)
			return nil
		},
	})
}
