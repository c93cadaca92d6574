package trainer_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/rundir"
	"github.com/grpo-dev/grpo/trainer"
)

// TestTrainLoopOnEmu runs two steps of the GRPO loop — rollouts through the
// sampler, rewards, advantages, policy gradient, AdamW, checkpoint and
// adapter save — on the emulated CUDA backend and on the CPU backend from
// the same config and seed, and checks the runs agree: the same rollouts
// (the sampler draws on the host from logits that differ in the last bits,
// so the same tokens), the same rewards, and the same update (gradient
// norm, entropy). It is what `scripts/gpu-check.sh run`'s train step does
// with `--device cuda` on a GPU.
//
// The bounds follow the dtypes. emu's sampler keeps its KV cache in bf16
// (kernels.Description.KVCache, as on cuda) while the trainer recomputes
// the log-probs through an f32 cache, so on emu the importance ratios
// differ from 1 by the bf16 cache's effect on a log-prob (≤ 2e-3,
// sampler.TestSharedPromptEmuMatchesCPU): step 1's loss is that times the
// advantages (≤ 1e-3 absolute, not ~1e-8) and its gradient norm moves by
// as much relatively (≤ 2e-3). AdamW's first step moves every parameter
// by ±lr whatever its gradient's size, so gradient components near zero
// that differ in sign move apart by 2·lr, and step 2's adapters — hence
// its gradient norm and entropy — differ by several percent (≤ 15 % and
// 1e-3 here); its rollouts and rewards stay the same.
func TestTrainLoopOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s: a process per rollout for the command rubric")
	}
	dir := t.TempDir()
	if err := tinymodel.Write(filepath.Join(dir, "model"), filepath.Join("..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	if err := tinymodel.WriteReverseEnv(filepath.Join(dir, "env"), 24); err != nil {
		t.Fatal(err)
	}
	// The random tiny model never scores on the ratio rubric: every reward
	// 0, every advantage 0, nothing trained. A reward that depends on the
	// bytes of the rollout (its JSON length mod 13) gives mixed advantages,
	// so the two backends' updates have something to agree on.
	rubric := "id = \"test-bytes\"\nprompt_template = \"reverse {question}\"\nparser = \"none\"\n\n[dataset]\ntrain = \"train.jsonl\"\neval = \"eval.jsonl\"\n\n" +
		"[[rubric]]\ntype = \"command\"\nargv = [\"sh\", \"-c\", \"wc -c | awk '{print ($1 % 13) / 13}'\"]\nweight = 1.0\n"
	if err := os.WriteFile(filepath.Join(dir, "env", "environment.toml"), []byte(rubric), 0o644); err != nil {
		t.Fatal(err)
	}
	text := fmt.Appendf(nil, `model = %q
max_steps = 2
batch_size = 8
rollouts_per_example = 4
seed = 7

[sampling]
max_tokens = 6

[[env]]
id = %q

[lora]
rank = 4
alpha = 8

[optimizer]
lr = 1e-2
`, filepath.Join(dir, "model"), filepath.Join(dir, "env"))
	run := func(name string, be kernels.Backend) []map[string]any {
		cfg, err := config.Parse(text, "run.toml")
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name)
		res, err := trainer.New(cfg, trainer.WithBackend(be), trainer.WithOutput(out), trainer.WithConfigText(text),
			trainer.WithProgress(nilWriter{})).Run(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Steps != 2 {
			t.Fatalf("%s: %d steps, want 2", name, res.Steps)
		}
		if _, err := os.Stat(filepath.Join(res.Adapter, "adapter_model.safetensors")); err != nil {
			t.Fatalf("%s: adapter not saved: %v", name, err)
		}
		rows, err := rundir.ReadJSONL(filepath.Join(res.RunDir, "metrics.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	b := emu.New()
	defer b.Close()
	got, want := run("emu", b), run("cpu", cpu.New())
	if len(got) != len(want) {
		t.Fatalf("%d metric rows on emu, %d on cpu", len(got), len(want))
	}
	type bound struct {
		key      string
		abs, rel float64
	}
	bounds := [][]bound{
		{{"reward", 0, 0}, {"loss", 1e-3, 0}, {"grad_norm", 0, 2e-3}, {"entropy", 0, 1e-5}},
		{{"reward", 0, 0}, {"loss", 1e-3, 0}, {"grad_norm", 0, 0.15}, {"entropy", 0, 1e-3}},
	}
	for i := range want {
		// reward: same rollouts, so exactly equal. loss: on-policy the
		// ratios are 1 (up to the sampler's bf16 cache, above) and the
		// advantages sum to 0 per group, so the loss is near 0 — compared
		// absolutely. grad_norm and entropy carry the update: relative to
		// the CPU's.
		for _, c := range bounds[i] {
			g, ok1 := got[i][c.key].(float64)
			w, ok2 := want[i][c.key].(float64)
			if !ok1 || !ok2 || math.IsNaN(g) {
				t.Fatalf("row %d: %s = %v on emu, %v on cpu", i, c.key, got[i][c.key], want[i][c.key])
			}
			if math.Abs(g-w) > c.abs+c.rel*math.Abs(w) {
				t.Errorf("step %d: %s %.9g on emu, %.9g on cpu", i+1, c.key, g, w)
			}
		}
		if gn, _ := want[i]["grad_norm"].(float64); !(gn > 0) {
			t.Errorf("step %d: grad_norm %v: the rewards gave no update to compare", i+1, want[i]["grad_norm"])
		}
		t.Logf("step %d: reward %.4g, grad_norm emu %.9g cpu %.9g", i+1, want[i]["reward"], got[i]["grad_norm"], want[i]["grad_norm"])
	}
}

type nilWriter struct{}

func (nilWriter) Write(p []byte) (int, error) { return len(p), nil }
