package eval

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// TestSpecReasoningEffort: an eval spec's reasoning_effort reaches the
// model's chat template when the template reads it (the prompts say it),
// and when the template does not, the run goes on with one note naming
// the key.
func TestSpecReasoningEffort(t *testing.T) {
	_, _, _, mdir := evalFixture(t)
	p := sampler.DefaultParams()
	p.MaxTokens = 2
	spec := config.EvalSpec{Name: "a", ID: "reverse-text", Args: map[string]any{"num_eval_examples": 1, "dataset_name": "synthetic"},
		Model: mdir, Device: "cpu", NumExamples: -1, RolloutsPerExample: 1, Sampling: p, ReasoningEffort: "low"}
	var notes []string
	if _, err := RunSpecs(context.Background(), []config.EvalSpec{spec}, SpecOptions{Notes: func(s string) { notes = append(notes, s) }}); err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], `sampling_args.reasoning_effort = "low" changes nothing`) {
		t.Errorf("notes %q", notes)
	}
	tpl := "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\nReasoning: {{ reasoning_effort }}\n"
	if err := os.WriteFile(filepath.Join(mdir, "chat_template.jinja"), []byte(tpl), 0o644); err != nil {
		t.Fatal(err)
	}
	notes = nil
	res, err := RunSpecs(context.Background(), []config.EvalSpec{spec}, SpecOptions{Notes: func(s string) { notes = append(notes, s) }})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(mdir)
	if err != nil {
		t.Fatal(err)
	}
	if prompt := tok.Decode(res[0].Trajectories[0].PromptTokens); len(notes) != 0 || !strings.HasSuffix(prompt, "Reasoning: low") {
		t.Errorf("notes %q, prompt %q", notes, prompt)
	}
}
