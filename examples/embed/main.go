// Command embed shows grpo as a library: a reward environment written in
// Go (no config file, no CLI), trained with GRPO + LoRA through the trainer
// package, with a callback that watches every step.
//
//	go run ./examples/embed                       # the demo model, 30 steps
//	go run ./examples/embed -model Qwen/Qwen3-0.6B -steps 100 -device cuda
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rubric"
	"github.com/grpo-dev/grpo/trainer"
)

// spell asks the model to write a word backwards; the reward is the
// difflib ratio between the answer and the reversed word, so partial
// answers earn partial credit.
type spell struct{ words []string }

func (s spell) ID() string { return "spell-backwards" }

func (s spell) Examples(split string) ([]env.Example, error) {
	words := s.words[:len(s.words)*9/10]
	if split == "eval" {
		words = s.words[len(s.words)*9/10:]
	}
	var out []env.Example
	for i, w := range words {
		out = append(out, env.Example{
			ID:     fmt.Sprintf("%s-%d", split, i),
			Prompt: []chat.Message{{Role: "user", Content: "reverse " + w}},
			Answer: reverse(w),
		})
	}
	return out, nil
}

func (spell) NewEpisode(env.Example) env.Episode { return singleTurn{} }

// Rubric combines two reward functions: the ratio (weight 0.9) and a small
// bonus for answering in lowercase letters only (weight 0.1).
func (spell) Rubric() *rubric.Rubric {
	rb, err := rubric.Weighted(
		rubric.Term{Name: "ratio", Weight: 0.9, Func: rubric.Reward(func(r rubric.Rollout) float64 {
			return rubric.Ratio(strings.TrimSpace(r.LastAssistant()), r.Answer)
		})},
		rubric.Term{Name: "lowercase", Weight: 0.1, Func: rubric.Reward(func(r rubric.Rollout) float64 {
			a := strings.TrimSpace(r.LastAssistant())
			if a == "" || strings.Trim(a, "abcdefghijklmnopqrstuvwxyz") != "" {
				return 0
			}
			return 1
		})},
	)
	if err != nil {
		panic(err) // the weights above are valid
	}
	return rb
}

type singleTurn struct{}

func (singleTurn) Respond(context.Context, string) ([]chat.Message, bool, error) {
	return nil, true, nil
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

func main() {
	model := flag.String("model", "examples/demo/model", "model directory or hub id")
	steps := flag.Int("steps", 30, "training steps")
	device := flag.String("device", "cpu", "cpu or cuda")
	out := flag.String("output", "", "run directory (default runs/embed-<time>)")
	flag.Parse()

	words := strings.Fields("ant bee cat cod cow cub doe dog eel elk emu fox gnu hen jay kid koi owl pig ram rat yak ape asp bat boa " +
		"bug cob cur dab fly gar gib hog imp kit lab man mew mow nag pup roe sow tit tom wren")
	cfg := config.DefaultConfig()
	cfg.Name = "embed"
	cfg.Model, cfg.Device = *model, *device
	cfg.MaxSteps = *steps
	cfg.BatchSize, cfg.RolloutsPerExample = 64, 8
	cfg.Sampling.MaxTokens = 8
	cfg.Optimizer.LR = 5e-3

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts := []trainer.Option{
		trainer.WithEnvironment(spell{words: words}),
		trainer.WithStepCallback(func(s trainer.StepResult) {
			fmt.Printf("step %3d  reward %.3f  ratio %.3f  lowercase %.3f\n",
				s.Step, s.Metrics["reward"], s.Metrics["reward/ratio"], s.Metrics["reward/lowercase"])
		}),
	}
	if *out != "" {
		opts = append(opts, trainer.WithOutput(*out))
	}
	res, err := trainer.New(&cfg, opts...).Run(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
	fmt.Println("adapter:", res.Adapter)
}
