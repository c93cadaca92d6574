package trainer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/rundir"
	"github.com/grpo-dev/grpo/trainer"
)

// keepRun is one emu training run of keepConfig: its metrics and eval
// rows, the decode graphs captured in each step (its rollouts, update and
// the eval after it) and the run's log.
type keepRun struct {
	metrics, evals []map[string]any
	captures       []int64
	log            string
}

// keepConfig is three steps of 8 rollouts (2 examples × 4) with an eval
// of 3 examples before step 1 and after step 2, so the engine serves
// calls of two sizes. The command rubric (bytes of the rollout mod 13)
// gives mixed advantages, so the adapter changes at every step and later
// steps sample from the updated policy.
func keepConfig(t *testing.T) (text []byte, dir string) {
	dir = t.TempDir()
	if err := tinymodel.Write(filepath.Join(dir, "model"), filepath.Join("..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	if err := tinymodel.WriteReverseEnv(filepath.Join(dir, "env"), 24); err != nil {
		t.Fatal(err)
	}
	rubric := "id = \"test-bytes\"\nprompt_template = \"reverse {question}\"\nparser = \"none\"\n\n[dataset]\ntrain = \"train.jsonl\"\neval = \"eval.jsonl\"\n\n" +
		"[[rubric]]\ntype = \"command\"\nargv = [\"sh\", \"-c\", \"wc -c | awk '{print ($1 % 13) / 13}'\"]\nweight = 1.0\n"
	if err := os.WriteFile(filepath.Join(dir, "env", "environment.toml"), []byte(rubric), 0o644); err != nil {
		t.Fatal(err)
	}
	return fmt.Appendf(nil, `model = %q
max_steps = 3
batch_size = 8
rollouts_per_example = 4
seed = 11

[sampling]
max_tokens = 8

[[env]]
id = %q

[eval]
interval = 2
num_examples = 3
rollouts_per_example = 1

[lora]
rank = 4
alpha = 8

[optimizer]
lr = 1e-2
`, filepath.Join(dir, "model"), filepath.Join(dir, "env")), dir
}

func runKeep(t *testing.T, text []byte, out string, opts ...trainer.Option) keepRun {
	t.Helper()
	be := emu.New()
	defer be.Close()
	cfg, err := config.Parse(text, "run.toml")
	if err != nil {
		t.Fatal(err)
	}
	var r keepRun
	last := be.Counts()
	opts = append(opts, trainer.WithBackend(be), trainer.WithOutput(out), trainer.WithProgress(nilWriter{}),
		trainer.WithStepCallback(func(trainer.StepResult) {
			now := be.Counts()
			r.captures = append(r.captures, now.Sub(last).Captures)
			last = now
		}))
	res, err := trainer.New(cfg, opts...).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 3 {
		t.Fatalf("%d steps, want 3", res.Steps)
	}
	if r.metrics, err = rundir.ReadJSONL(filepath.Join(out, "metrics.jsonl")); err != nil {
		t.Fatal(err)
	}
	if r.evals, err = rundir.ReadJSONL(filepath.Join(out, "eval.jsonl")); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(out, "log.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r.log = string(log)
	return r
}

// sameRows compares metric rows key by key, bit for bit, but for the
// timings and the sampler/kept flag.
func sameRows(t *testing.T, what string, got, want []map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range want {
		for k, w := range want[i] {
			if strings.HasPrefix(k, "time/") || k == "tokens_per_s" || k == "sampler/kept" {
				continue
			}
			if g := got[i][k]; g != w {
				t.Errorf("%s row %d: %s = %v, want %v (a new sampler per call)", what, i, k, g, w)
			}
		}
	}
}

// TestKeptSamplerOnEmu trains three steps with evals on the emulated CUDA
// backend three times: with the sampler kept across steps and evals (the
// default), with it freed before every update because the free memory
// (a fake MemAvailable of 1 byte beside the resident items) cannot hold
// the kept sampler and training together, and with a new sampler per
// call (WithSamplerPerCall, the path before). Every metric and eval
// figure is the same bit for bit in all three — rewards, loss, grad norm,
// entropy, so the kept decode graphs sample from the adapter as each
// update left it. The kept run captures its buckets' graphs in the first
// steps only (a bucket's graph is taken at its second step), and the
// other two capture them again at every step. The decision and its reason
// are in log.txt and in metrics (sampler/kept).
func TestKeptSamplerOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("about 30 s: three 3-step runs, a process per rollout for the command rubric")
	}
	text, dir := keepConfig(t)
	fresh := runKeep(t, text, filepath.Join(dir, "fresh"), trainer.WithSamplerPerCall())
	kept := runKeep(t, text, filepath.Join(dir, "kept"))
	t.Setenv(estimate.FakeMemAvailableEnv, "1")
	freed := runKeep(t, text, filepath.Join(dir, "freed"))
	t.Logf("captures per step: kept %v, freed %v, new sampler per call %v", kept.captures, freed.captures, fresh.captures)
	if fresh.captures[2] == 0 {
		t.Fatalf("the per-call run captured no graph in step 3; the test needs the static decode path")
	}
	for _, c := range []struct {
		name, line string
		run        keepRun
		kept       float64
	}{
		{"kept", "sampler: kept across steps", kept, 1},
		{"freed", "sampler: freed before each policy update", freed, 0},
	} {
		sameRows(t, c.name+" metrics", c.run.metrics, fresh.metrics)
		sameRows(t, c.name+" eval", c.run.evals, fresh.evals)
		if !strings.Contains(c.run.log, c.line) {
			t.Errorf("%s: log.txt has no line %q:\n%s", c.name, c.line, c.run.log)
		}
		for i, row := range c.run.metrics {
			if row["sampler/kept"] != c.kept {
				t.Errorf("%s: step %d: sampler/kept = %v, want %v", c.name, i+1, row["sampler/kept"], c.kept)
			}
		}
	}
	if kept.captures[2] >= fresh.captures[2] {
		t.Errorf("step 3: %d captures with the kept sampler, %d with a new sampler per call; want fewer", kept.captures[2], fresh.captures[2])
	}
	if freed.captures[2] == 0 {
		t.Errorf("step 3 of the freed run captured no graph: the sampler was kept through the update")
	}
}
