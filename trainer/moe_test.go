package trainer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/rundir"
	"github.com/grpo-dev/grpo/trainer"
)

// TestTrainMoERoutingReplay runs a GRPO step on the Qwen3-MoE tiny model
// (a dense layer among sparse ones) with adapters on attention and every
// expert. With routing replay on (the default) the sampler records each
// token's experts, the training forward replays them, and the step
// reports routing/mismatch — 0 here: the policy that sampled is the one
// trained, on one backend — over every token the update read; with
// routing_replay = false no routing is recorded or reported.
func TestTrainMoERoutingReplay(t *testing.T) {
	dir := t.TempDir()
	if err := tinymodel.Write(filepath.Join(dir, "model"), filepath.Join("..", "testdata", "models", "qwen3-moe-tiny-dense")); err != nil {
		t.Fatal(err)
	}
	if err := tinymodel.WriteReverseEnv(filepath.Join(dir, "env"), 8); err != nil {
		t.Fatal(err)
	}
	for _, replay := range []bool{true, false} {
		text := fmt.Appendf(nil, `model = %q
max_steps = 1
batch_size = 4
rollouts_per_example = 2
seed = 3

[sampling]
max_tokens = 5

[[env]]
id = %q

[lora]
rank = 2
alpha = 4

[loss]
routing_replay = %v
`, filepath.Join(dir, "model"), filepath.Join(dir, "env"), replay)
		cfg, err := config.Parse(text, "run.toml")
		if err != nil {
			t.Fatal(err)
		}
		res, err := trainer.New(cfg, trainer.WithBackend(cpu.New()), trainer.WithOutput(filepath.Join(dir, fmt.Sprint("run-", replay))),
			trainer.WithConfigText(text), trainer.WithProgress(nilWriter{})).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rows, err := rundir.ReadJSONL(filepath.Join(res.RunDir, "metrics.jsonl"))
		if err != nil || len(rows) != 1 {
			t.Fatalf("metrics: %v rows, %v", len(rows), err)
		}
		mismatch, hasM := rows[0]["routing/mismatch"].(float64)
		replayed, _ := rows[0]["routing/replayed_tokens"].(float64)
		if !replay {
			if hasM {
				t.Errorf("routing_replay = false: routing/mismatch %v reported", mismatch)
			}
			continue
		}
		if !hasM || mismatch != 0 || !(replayed > 0) {
			t.Errorf("routing/mismatch %v (present %v), replayed tokens %v: want 0 over a positive count", mismatch, hasM, replayed)
		}
		t.Logf("replayed the sampled routing of %v tokens; mismatch %v", replayed, mismatch)
	}
}
