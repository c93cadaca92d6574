package trainer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/rundir"
)

// writeEPFixture is writeDPFixture over the tiny Qwen3-MoE (8 experts,
// 2 sparse layers) with adapters on attention and every expert, at lr
// 5e-3. Not on the router: its load-balancing loss is defined per
// micro-batch (loss.PolicyGradient weighs each by its tokens), and a
// device's share is another micro-batch than one device's whole batch,
// so with the router trained no layout over several devices — data
// parallel included — reproduces one device (measured: aux_loss 2.3401
// against 2.3459 at step 1). The lr: AdamW scales a parameter's step to
// about lr however small its gradient (lora_A's are 0 at step 1, lora_B
// starting at zero), so rounding differences in such gradients show at
// lr's scale; here those of the sampled log-probs (the ranks' expert
// sums add in another order, within 1e-6).
func writeEPFixture(t *testing.T, dir string, batch int) {
	t.Helper()
	writeDPFixture(t, dir, batch, 0)
	moe := filepath.Join(dir, "moe")
	if err := tinymodel.Write(moe, filepath.Join("..", "testdata", "models", "qwen3-moe-tiny")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "run.toml")
	text, _ := os.ReadFile(path)
	doc := strings.Replace(string(text), fmt.Sprintf("model = %q", filepath.Join(dir, "model")), fmt.Sprintf("model = %q", moe), 1)
	doc = strings.Replace(doc, "lr = 1e-2", "lr = 5e-3", 1)
	doc = strings.Replace(doc, "[lora]\n", "[lora]\ntarget_modules = [\"q_proj\", \"v_proj\", \"gate_proj\", \"up_proj\", \"down_proj\"]\n", 1)
	// An eval before the first step and after the second: 5 examples of
	// 2 rollouts, 3 on one rank and 2 on the other.
	doc += "\n[eval]\ninterval = 2\nnum_examples = 5\nrollouts_per_example = 2\n"
	if doc == string(text) || !strings.Contains(doc, moe) {
		t.Fatal("the fixture's config did not take the MoE model")
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

// epHeader is devices and expert_parallel = their count.
func epHeader(devs []string) string {
	if len(devs) == 0 {
		return ""
	}
	return fmt.Sprintf("devices = [%q]\nexpert_parallel = 2\n", devs[0])
}

// sameEvals fails unless the runs in dir's got and want wrote the same
// eval rewards at the same steps (the completions are among runDevices').
func sameEvals(t *testing.T, dir, got, want string) {
	t.Helper()
	read := func(name string) []map[string]any {
		rows, err := rundir.ReadJSONL(filepath.Join(dir, name, "eval.jsonl"))
		if err != nil || len(rows) != 2 {
			t.Fatalf("%s: %d eval rows, %v; want 2 (before step 1, after step 2)", name, len(rows), err)
		}
		return rows
	}
	g, w := read(got), read(want)
	for i := range w {
		if g[i]["step"] != w[i]["step"] || g[i]["reward"] != w[i]["reward"] {
			t.Errorf("%s: eval %d: step %v reward %v, one device step %v reward %v", got, i, g[i]["step"], g[i]["reward"], w[i]["step"], w[i]["reward"])
		}
	}
}

// logHas fails unless the run's log.txt holds want.
func logHas(t *testing.T, runDir, want string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "log.txt"))
	if err != nil || !strings.Contains(string(b), want) {
		t.Errorf("%s/log.txt does not say %q (%v)", runDir, want, err)
	}
}

// TestExpertParallelRunReproducesOneDevice: a run of the tiny Qwen3-MoE
// over two cpu devices with expert_parallel = 2 — each device a rank
// holding 4 of the 8 experts of each sparse layer with their adapters and
// moments, sampling its share of every step's groups in lockstep with the
// other (rollout/lockstep.go), training it with the experts' rows
// exchanged, one all-reduce of the replicated gradients — trains as one
// device does over 3 steps: the same completions and rewards, loss and
// gradient norm within 1e-5 relative (grad_norm measured within 1.4e-7),
// the adapters within 1e-5 (measured 6.1e-6). Resumed after step 1 on
// the other layout, 2 → 1 (the ranks' checkpoint gathered into one
// device's files) and 1 → 2 (each rank loading its share of a one-device
// checkpoint), it ends where the uninterrupted run does (4.0e-6, 3.5e-6).
// The evals before step 1 and after step 2, every rank playing its share
// of the examples, give one device's rewards. Over four cpu devices,
// EP 2 × DP 2 (two EP groups, each expert on two devices, its gradients
// summed over them) holds to the same bars (adapters 3.4e-6), and so
// does its checkpoint resumed on EP 2 (3.4e-6). Without expert_parallel
// the run takes estimate's plan, data parallel here (the tiny model fits
// each device), and trains as one device does too.
func TestExpertParallelRunReproducesOneDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("four 3-step MoE runs")
	}
	t.Setenv("GRPO_CHECK_REPLICAS", "1")
	dir := t.TempDir()
	writeEPFixture(t, dir, 24)
	one := runDevicesWith(t, dir, "one", epHeader, nil, 0, nil)
	sameRun(t, "EP 2 on cpu:0-1", runDevicesWith(t, dir, "two", epHeader, []string{"cpu:0-1"}, 0, nil), one, 1e-5)
	logHas(t, filepath.Join(dir, "two"), "layout: expert parallel over 2 devices, EP 2 × DP 1")
	sameEvals(t, dir, "two", "one")
	sameRun(t, "resumed EP 2 → 1", runDevicesWith(t, dir, "two-one", epHeader, []string{"cpu:0-1"}, 1, nil), one, 1e-5)
	sameRun(t, "resumed 1 → EP 2", runDevicesWith(t, dir, "one-two", epHeader, nil, 1, []string{"cpu:0-1"}), one, 1e-5)
	logHas(t, filepath.Join(dir, "one-two"), "layout: expert parallel over 2 devices, EP 2 × DP 1")
	sameEvals(t, dir, "one-two", "one")
	sameRun(t, "EP 2 × DP 2 on cpu:0-3", runDevicesWith(t, dir, "four", epHeader, []string{"cpu:0-3"}, 0, nil), one, 1e-5)
	logHas(t, filepath.Join(dir, "four"), "layout: expert parallel over 4 devices, EP 2 × DP 2")
	sameEvals(t, dir, "four", "one")
	// Without the key the run takes estimate's plan: the tiny model fits
	// each device whole, so data parallel.
	sameRun(t, "as planned on cpu:0-1", runDevicesWith(t, dir, "planned", devicesHeader, []string{"cpu:0-1"}, 0, nil), one, 1e-5)
	logHas(t, filepath.Join(dir, "planned"), "layout: data parallel over 2 devices (data parallel: the whole model fits each device")
	sameRun(t, "resumed EP 2 × DP 2 → EP 2", runDevicesWith(t, dir, "four-two", epHeader, []string{"cpu:0-3"}, 1, []string{"cpu:0-1"}), one, 1e-5)
}

// TestExpertParallelKeyRefused: expert_parallel is refused in one line
// naming it and the fix where the devices or the model cannot take it.
func TestExpertParallelKeyRefused(t *testing.T) {
	dir := t.TempDir()
	writeEPFixture(t, dir, 24)
	text, _ := os.ReadFile(filepath.Join(dir, "run.toml"))
	dense := strings.Replace(string(text), filepath.Join(dir, "moe"), filepath.Join(dir, "model"), 1)
	for _, c := range []struct{ header, doc, want string }{
		{"expert_parallel = 2\n", string(text), "expert_parallel = 2 but the run has one device"},
		{"devices = [\"cpu:0-2\"]\nexpert_parallel = 2\n", string(text), "expert_parallel = 2 does not divide the run's 3 devices"},
		{"devices = [\"cpu:0-2\"]\nexpert_parallel = 3\n", string(text), "expert_parallel = 3 does not divide the model's 8 experts per layer"},
		{"devices = [\"cpu:0-1\"]\nexpert_parallel = 2\n", dense, "has no routed experts to split over devices; drop expert_parallel"},
		{"expert_parallel = -1\n", string(text), "expert_parallel = -1: must be ≥ 0"},
	} {
		_, err := func() (any, error) {
			cfg, err := config.Parse([]byte(c.header+c.doc), "run.toml")
			if err != nil {
				return nil, err
			}
			return New(cfg, WithOutput(filepath.Join(t.TempDir(), "run"))).Run(context.Background())
		}()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: got %v, want one line with %q", c.header, err, c.want)
		}
	}
}
