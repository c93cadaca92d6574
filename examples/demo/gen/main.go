// Command gen makes the CPU demo's fixtures, deterministically:
//
//	examples/demo/env/    the task, as a custom environment: reverse a short
//	                      lowercase word; reward = difflib ratio
//	examples/demo/model/  a tiny Qwen3 model (259-token byte tokenizer,
//	                      ChatML template) warm-started by supervised
//	                      fine-tuning: a real reversal skill, then a
//	                      refusal habit that hides it
//
// Random initialisation cannot find this task's reward by chance in a few
// minutes, so the model starts with the skill already learned: SFT runs in
// rounds (train a LoRA adapter, merge it into the base, start a fresh one)
// until the sampled reward reaches -target, then a short habit phase
// teaches it to refuse most of the time. GRPO has to find, from the reward
// alone, that answering pays. SFT trains each adapter with grpo's own
// backward (the GRPO loss with advantage 1 and on-policy log-probs is the
// negative log-likelihood).
//
// Run from the repository root: go run ./examples/demo/gen
package main

import (
	"flag"
	"fmt"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/lora"
)

// options are the generator's knobs; the defaults make the committed
// fixtures, the flags exist to explore others.
type options struct {
	out            string
	hidden, layers int
	headDim        int
	qkScale        float64 // q_norm/k_norm weights of the frozen base
	ropeTheta      float64
	rank           int     // SFT LoRA rank
	lr             float64 // SFT learning rate
	batch          int     // SFT examples per step
	target         float64 // stop SFT at this sampled eval reward
	maxSteps       int
	roundSteps     int     // SFT steps per merged round (0: one round)
	refuse         float64 // share of habit-phase demonstrations that refuse
	habitSteps     int
	minLen, maxLen int // word lengths of the task
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "examples/demo", "output directory")
	flag.IntVar(&o.hidden, "hidden", 96, "model hidden size")
	flag.IntVar(&o.layers, "layers", 2, "model layers")
	flag.IntVar(&o.headDim, "head-dim", 16, "attention head size")
	flag.Float64Var(&o.qkScale, "qk-scale", 1, "q_norm and k_norm weights of the base model")
	flag.Float64Var(&o.ropeTheta, "rope-theta", 10000, "RoPE base")
	flag.IntVar(&o.rank, "rank", 32, "SFT LoRA rank")
	flag.Float64Var(&o.lr, "lr", 1e-2, "SFT learning rate")
	flag.IntVar(&o.batch, "batch", 32, "SFT batch size")
	flag.Float64Var(&o.target, "target", 0.85, "stop SFT when the sampled eval reward reaches this")
	flag.IntVar(&o.maxSteps, "max-steps", 2000, "SFT step limit")
	flag.IntVar(&o.roundSteps, "round-steps", 50, "SFT steps per round; each round's adapter is merged into the base (0: one adapter)")
	flag.Float64Var(&o.refuse, "refuse", 0.9, "share of habit-phase demonstrations answered with the refusal")
	flag.IntVar(&o.habitSteps, "habit-steps", 50, "SFT steps of the habit phase")
	flag.IntVar(&o.minLen, "min-len", 3, "shortest word")
	flag.IntVar(&o.maxLen, "max-len", 4, "longest word")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	envDir := filepath.Join(o.out, "env")
	if err := writeEnv(envDir, o.minLen, o.maxLen); err != nil {
		return err
	}
	raw, err := os.MkdirTemp("", "demo-model-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(raw)
	if err := tinymodel.WriteByteTokenizer(raw); err != nil {
		return err
	}
	if err := writeRandomModel(raw, o); err != nil {
		return err
	}
	base, ad, err := warmStart(raw, filepath.Join(raw, "rounds"), envDir, o)
	if err != nil {
		return err
	}
	modelDir := filepath.Join(o.out, "model")
	if err := os.RemoveAll(modelDir); err != nil {
		return err
	}
	if err := lora.WriteMerged(modelDir, base, ad); err != nil {
		return err
	}
	fmt.Println("wrote", modelDir, "and", envDir)
	return nil
}
