package trainer_test

import (
	"context"
	"fmt"
	"math"
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

// TestTrainMoERoutingReplay runs a GRPO step on the Qwen3-MoE tiny model
// (a dense layer among sparse ones) with adapters on attention and every
// expert. With routing replay on (the default) the sampler records each
// token's experts, the training forward replays them, and the step
// reports routing/mismatch — 0 here: the policy that sampled is the one
// trained, on one backend — over every token the update read; with
// routing_replay = false no routing is recorded or reported.
func TestTrainMoERoutingReplay(t *testing.T) {
	dir := moeRunDir(t)
	for _, replay := range []bool{true, false} {
		row := moeStep(t, dir, fmt.Sprint("run-", replay), cpu.New(), replay)
		mismatch, hasM := row["routing/mismatch"].(float64)
		replayed, _ := row["routing/replayed_tokens"].(float64)
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

// noGraphs hides the emulated backend's kernels.Graphs: the sampler then
// decodes through Forward, one call per step.
type noGraphs struct{ kernels.Backend }

// TestTrainMoERoutingReplayStaticOnEmu runs the same step on the emulated
// CUDA backend, where the sampler decodes in graphs while it records the
// routing (model.Decoder.StepRecording), and again with the graphs hidden
// (the Forward path's record): the step's metrics are the same — the
// rollouts' rewards, the entropy, and routing/mismatch over the same
// replayed tokens exactly; the loss within 1e-7 and the update's
// grad_norm within 1e-6 relative, because the static step reads each
// group's shared prompt once (kernels.AttentionSharedPrefix), summing
// attention in another order than Forward's decode, so the sampled
// tokens' log-probs (the old policy's, in the loss) differ in their last
// bits (measured: loss 1.9e-8 apart, grad_norm 3e-8 relative; a
// log-prob moved by 1e-5 on a few of the 140 tokens, weighted by its
// advantage over the tokens, stays below 1e-7). (On emu
// the mismatch is not 0: the sampler's bf16 KV cache against the
// trainer's f32 recomputation flips a few near-ties, the same ones on
// both paths.)
func TestTrainMoERoutingReplayStaticOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("two GRPO steps under the emulator (about 10 s)")
	}
	dir := moeRunDir(t)
	be := emu.New()
	defer be.Close()
	before := be.Counts()
	static := moeStep(t, dir, "static", be, true)
	graphs := be.Counts().Sub(before).GraphLaunches
	before = be.Counts()
	forward := moeStep(t, dir, "forward", noGraphs{be}, true)
	if g := be.Counts().Sub(before).GraphLaunches; graphs == 0 || g != 0 {
		t.Fatalf("graph launches: %d with graphs (want some: the static path), %d without (want 0)", graphs, g)
	}
	tol := map[string]float64{"loss": 1e-7, "grad_norm": 1e-6 * math.Abs(forwardValue(forward, "grad_norm"))}
	for _, key := range []string{"routing/mismatch", "routing/replayed_tokens", "reward", "loss", "grad_norm", "entropy"} {
		a, okA := static[key].(float64)
		b, okB := forward[key].(float64)
		if !okA || !okB || math.Abs(a-b) > tol[key] {
			t.Errorf("%s: %v (%v) with the static decode path, %v (%v) through Forward (|Δ| ≤ %g)", key, static[key], okA, forward[key], okB, tol[key])
		}
	}
	t.Logf("%d graph launches; routing/mismatch %v over %v replayed tokens on both paths", graphs, static["routing/mismatch"], static["routing/replayed_tokens"])
}

// forwardValue is a metric of row, 0 when it is missing (the comparison
// then reports it).
func forwardValue(row map[string]any, key string) float64 {
	v, _ := row[key].(float64)
	return v
}

// moeRunDir writes the tiny Qwen3-MoE (with a dense layer) and the
// reverse-text env into a temporary directory.
func moeRunDir(t *testing.T) string {
	dir := t.TempDir()
	if err := tinymodel.Write(filepath.Join(dir, "model"), filepath.Join("..", "testdata", "models", "qwen3-moe-tiny-dense")); err != nil {
		t.Fatal(err)
	}
	if err := tinymodel.WriteReverseEnv(filepath.Join(dir, "env"), 8); err != nil {
		t.Fatal(err)
	}
	return dir
}

// moeStep runs one GRPO step over dir's model and env on be and returns
// its metrics row.
func moeStep(t *testing.T, dir, name string, be kernels.Backend, replay bool) map[string]any {
	t.Helper()
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
	res, err := trainer.New(cfg, trainer.WithBackend(be), trainer.WithOutput(filepath.Join(dir, name)),
		trainer.WithConfigText(text), trainer.WithProgress(nilWriter{})).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := rundir.ReadJSONL(filepath.Join(res.RunDir, "metrics.jsonl"))
	if err != nil || len(rows) != 1 {
		t.Fatalf("metrics: %v rows, %v", len(rows), err)
	}
	return rows[0]
}
