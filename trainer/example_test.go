package trainer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/rubric"
	"github.com/grpo-dev/grpo/trainer"
)

// echo is an environment written in Go: the model is asked to repeat a
// word, and the reward is the difflib ratio of its answer to the word.
type echo struct{}

func (echo) ID() string { return "echo" }

func (echo) Examples(split string) ([]env.Example, error) {
	var out []env.Example
	for i, w := range []string{"apple", "river", "stone", "cloud", "grass", "flame"} {
		out = append(out, env.Example{ID: fmt.Sprint(split, i), Answer: w,
			Prompt: []chat.Message{{Role: "user", Content: "say " + w}}})
	}
	return out, nil
}

func (echo) NewEpisode(env.Example) env.Episode { return oneTurn{} }

func (echo) Rubric() *rubric.Rubric {
	rb, _ := rubric.Weighted(rubric.Term{Name: "echo", Weight: 1, Func: rubric.Reward(func(r rubric.Rollout) float64 {
		return rubric.Ratio(r.LastAssistant(), r.Answer)
	})})
	return rb
}

// oneTurn ends the episode after the model's first answer.
type oneTurn struct{}

func (oneTurn) Respond(context.Context, string) ([]chat.Message, bool, error) {
	return nil, true, nil
}

// Train a LoRA adapter on a custom Go environment and watch each step.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "grpo-example-")
	defer os.RemoveAll(dir)
	modelDir := filepath.Join(dir, "model") // a tiny model with a byte tokenizer
	if err := tinymodel.Write(modelDir, filepath.Join("..", "testdata", "models", "qwen3-tiny")); err != nil {
		fmt.Println(err)
		return
	}

	cfg := config.DefaultConfig()
	cfg.Model = modelDir
	cfg.MaxSteps = 3
	cfg.BatchSize, cfg.RolloutsPerExample = 8, 4
	cfg.Sampling.MaxTokens = 8
	cfg.LoRA.Rank, cfg.LoRA.Alpha = 4, 8

	steps := 0
	res, err := trainer.New(&cfg,
		trainer.WithEnvironment(echo{}),
		trainer.WithOutput(filepath.Join(dir, "run")),
		trainer.WithStepCallback(func(s trainer.StepResult) { steps++ }),
	).Run(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	_, statErr := os.Stat(filepath.Join(res.Adapter, "adapter_model.safetensors"))
	fmt.Println("steps:", res.Steps, "callbacks:", steps, "adapter written:", statErr == nil)
	// Output: steps: 3 callbacks: 3 adapter written: true
}
