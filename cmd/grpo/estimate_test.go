package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/model"
)

// writeConfig writes a run config for model (a hub id or a directory) on
// the builtin reverse-text environment on its synthetic data, which needs
// no network.
func writeConfig(t *testing.T, model string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.toml")
	text := `model = "` + model + `"
max_steps = 3
batch_size = 256
rollouts_per_example = 8
[sampling]
max_tokens = 512
[[env]]
id = "reverse-text"
args = { dataset_name = "synthetic" }
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEstimateCommandJSON(t *testing.T) {
	cfg := writeConfig(t, "Qwen/Qwen3-0.6B")
	for _, c := range []struct {
		free string
		fits bool
	}{{"1T", true}, {"1G", false}} {
		t.Setenv(estimate.FakeMemAvailableEnv, c.free)
		code, out, errOut := runCaptured(t, "estimate", cfg, "--shape", "qwen3-0.6b", "--no-measure", "--json")
		if code != 0 {
			t.Fatalf("free %s: exit %d: %s", c.free, code, errOut)
		}
		var got struct {
			BaseParams      int64  `json:"base_params"`
			TrainableParams int64  `json:"trainable_params"`
			PeakBytes       int64  `json:"peak_bytes"`
			Fits            *bool  `json:"fits"`
			Verdict         string `json:"verdict"`
			Items           []struct {
				Phase string `json:"phase"`
				Name  string `json:"name"`
				Bytes int64  `json:"bytes"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if got.BaseParams != 596_049_920 || got.TrainableParams != 10_092_544 || got.Fits == nil || *got.Fits != c.fits {
			t.Errorf("free %s: %+v", c.free, got)
		}
		var weights int64
		for _, it := range got.Items {
			if it.Name == "base weights" {
				weights = it.Bytes
			}
		}
		if weights != 596_049_920*4 {
			t.Errorf("base weights %d bytes, want f32 on cpu", weights)
		}
		if !c.fits && !strings.Contains(got.Verdict, "does not fit") {
			t.Errorf("verdict %q", got.Verdict)
		}
	}
}

func TestEstimateCommandTable(t *testing.T) {
	t.Setenv(estimate.FakeMemAvailableEnv, "64G")
	cfg := writeConfig(t, filepath.Join("..", "..", "testdata", "models", "qwen3-tiny"))
	code, out, errOut := runCaptured(t, "estimate", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"131,520 base parameters", "KV cache reverse-text", "peak (", "time: ≈", "/step", "fits: uses"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut := runCaptured(t, "estimate", cfg, "--shape", "qwen9-huge"); code != 1 || !strings.Contains(errOut, "qwen3-0.6b") {
		t.Errorf("unknown shape: exit %d, %s", code, errOut)
	}
	if code, _, _ := runCaptured(t, "estimate"); code != 2 {
		t.Errorf("no config: exit %d, want 2 (usage)", code)
	}
}

// grpo train refuses a run that cannot fit before creating anything, in
// one line that names the estimate, the free memory and --force. (With
// nothing fitting, recompute = "auto" takes "layer", the least training
// memory, so the sampler's KV cache sets the peak.)
func TestTrainRefusesWhenTooBig(t *testing.T) {
	t.Setenv(estimate.FakeMemAvailableEnv, "1K")
	cfg := writeConfig(t, filepath.Join("..", "..", "testdata", "models", "qwen3-tiny"))
	out := filepath.Join(t.TempDir(), "run")
	code, _, errOut := runCaptured(t, "train", cfg, "--output", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errOut)
	}
	line := strings.TrimSpace(errOut)
	for _, want := range []string{"at peak", "1.0 KiB is free", estimate.FakeMemAvailableEnv, "--force", "lower batch_size"} {
		if !strings.Contains(line, want) {
			t.Errorf("refusal lacks %q: %s", want, line)
		}
	}
	if strings.Count(line, "\n") != 0 {
		t.Errorf("refusal is not one line:\n%s", errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused run created %s", out)
	}
}

// TestTrainRefusesDevicesThatCannotFit: with several devices grpo train's
// guard checks each device's share (estimate.DevicesFit): two cpu
// replicas that do not fit the host together are refused in one line
// naming them and --force, before anything is created.
func TestTrainRefusesDevicesThatCannotFit(t *testing.T) {
	t.Setenv(estimate.FakeMemAvailableEnv, "1K")
	cfg := writeConfig(t, filepath.Join("..", "..", "testdata", "models", "qwen3-tiny"))
	out := filepath.Join(t.TempDir(), "run")
	code, _, errOut := runCaptured(t, "train", cfg, "--output", out, "--devices", "cpu:0-1")
	line := strings.TrimSpace(errOut)
	if code != 1 || !strings.Contains(line, "2 cpu replicas need") || !strings.Contains(line, "--force") || strings.Count(line, "\n") != 0 {
		t.Fatalf("exit %d, want 1 and one line naming the replicas and --force: %s", code, errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused run created %s", out)
	}
}

// TestEstimateQwen3_8BOnH200 is issue 18's bar: Qwen3-8B (bf16 on cuda)
// training 4096-token rollouts (a 256-token prompt + max_tokens 3840) in
// micro-batches of 16384 tokens fits the 139 GiB an H200 reports, with the
// recompute setting that recompute = "auto" chose: the least extra
// arithmetic that fits. With f32 activations between ops that was
// checkpointing 12 of the 36 layers (swiglu+layer:12: 130.6 GiB, +14.6%
// FLOPs; keeping every activation took 195.9 GiB); with a bf16 layer's
// activations in bf16 (model/trace_acts.go) keeping every activation fits
// (124.9 GiB), so auto recomputes nothing; checkpointing every layer
// needs the least (49.2 GiB).
func TestEstimateQwen3_8BOnH200(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.toml")
	text := `model = "Qwen/Qwen3-8B"
device = "cuda"
batch_size = 16
rollouts_per_example = 8
micro_batch_tokens = 16384
[sampling]
max_tokens = 3840
[[env]]
id = "reverse-text"
args = { dataset_name = "synthetic" }
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	const h200 = 139 << 30
	t.Setenv(estimate.FakeMemAvailableEnv, "139G")
	code, out, errOut := runCaptured(t, "estimate", path, "--shape", "qwen3-8b", "--no-measure", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		PeakBytes  int64  `json:"peak_bytes"`
		Fits       *bool  `json:"fits"`
		Recompute  string `json:"recompute"`
		Recomputes []struct {
			Setting    string  `json:"setting"`
			Policy     string  `json:"policy"`
			Layers     int     `json:"checkpointed_layers"`
			Peak       int64   `json:"peak_bytes"`
			ExtraFLOPs float64 `json:"extra_flops"`
		} `json:"recompute_policies"`
		TrainFLOPs float64 `json:"train_flops_per_micro_batch"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Fits == nil || !*got.Fits || got.PeakBytes > h200 {
		t.Errorf("peak %d B, fits %v, recompute %q; want ≤ 139 GiB", got.PeakBytes, got.Fits, got.Recompute)
	}
	peaks, extra := map[string]int64{}, map[string]float64{}
	for _, r := range got.Recomputes {
		peaks[r.Setting], extra[r.Setting] = r.Peak, r.ExtraFLOPs
		if (r.Policy == "none") != (r.ExtraFLOPs == 0) || r.ExtraFLOPs > got.TrainFLOPs {
			t.Errorf("%s: %g extra FLOPs of %g", r.Setting, r.ExtraFLOPs, got.TrainFLOPs)
		}
	}
	if _, _, err := model.ParseRecomputeSetting(got.Recompute); err != nil || peaks[got.Recompute] != got.PeakBytes {
		t.Errorf("recompute %q (%v): its peak %d, the estimate's %d", got.Recompute, err, peaks[got.Recompute], got.PeakBytes)
	}
	for setting, p := range peaks {
		if p <= h200 && extra[setting] < extra[got.Recompute] {
			t.Errorf("%s fits (%d B) with fewer extra FLOPs (%g) than the chosen %s (%g)", setting, p, extra[setting], got.Recompute, extra[got.Recompute])
		}
	}
	if !(peaks["none"] >= peaks["swiglu"] && peaks["swiglu"] >= peaks["selective"] && peaks["selective"] > peaks["layer"]) {
		t.Errorf("peaks by setting %v: want none ≥ swiglu ≥ selective > layer", peaks)
	}
	t.Logf("peak by setting: %v (139 GiB = %d)", peaks, int64(h200))

	code, out, errOut = runCaptured(t, "estimate", path, "--shape", "qwen3-8b", "--no-measure")
	if code != 0 || !strings.Contains(out, "recompute = "+got.Recompute+" (auto: ") || !strings.Contains(out, "fits: uses") {
		t.Errorf("exit %d, table:\n%s%s", code, out, errOut)
	}
}

// TestEstimateQwen3_8BPlanFitsH200 is the scheduling-within-memory bar:
// Qwen3-8B with 256 rollouts of up to 4096 tokens (a 256-token prompt +
// max_tokens 3840) on cuda, with the H200's 139 GiB free, does not fit
// every rollout's bf16 KV cache at once (144 GiB), so grpo estimate cuts
// the pool to the free memory and shows the plan it chose: fewer than 256
// rollouts at once, in whole groups of 8 that share their prompt's
// blocks, in 2 passes, at a peak within 139 GiB.
func TestEstimateQwen3_8BPlanFitsH200(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.toml")
	text := `model = "Qwen/Qwen3-8B"
max_steps = 3
batch_size = 256
rollouts_per_example = 8
[sampling]
max_tokens = 3840
[[env]]
id = "reverse-text"
args = { dataset_name = "synthetic" }
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(estimate.FakeMemAvailableEnv, "139G")
	code, out, errOut := runCaptured(t, "estimate", path, "--shape", "qwen3-8b", "--device", "cuda", "--no-measure", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		PeakBytes int64 `json:"peak_bytes"`
		Fits      *bool `json:"fits"`
		KVPlans   []struct {
			Phase     string `json:"phase"`
			DType     string `json:"dtype"`
			Rollouts  int    `json:"rollouts"`
			Group     int    `json:"group"`
			MaxLen    int    `json:"max_len"`
			BlockSize int    `json:"block_size"`
			Blocks    int    `json:"blocks"`
			BlocksAll int    `json:"blocks_all"`
			Bytes     int64  `json:"bytes"`
			Cap       int    `json:"cap"`
			Passes    int    `json:"passes"`
			Bounded   bool   `json:"bounded"`
		} `json:"kv_plans"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Fits == nil || !*got.Fits || got.PeakBytes > 139<<30 {
		t.Fatalf("peak %d bytes, fits %v: want a plan within 139 GiB\n%s", got.PeakBytes, got.Fits, out)
	}
	if len(got.KVPlans) != 1 {
		t.Fatalf("%d KV plans, want the sampling phase's", len(got.KVPlans))
	}
	p := got.KVPlans[0]
	// 256 rollouts × 256 blocks of 16 tokens × 36 layers × 8 × 128 × 2 × 2 B = 144 GiB at once.
	if p.Phase != "sampling" || p.DType != "bf16" || p.Rollouts != 256 || p.Group != 8 || p.MaxLen != 4096 || p.BlockSize != 16 || p.BlocksAll != 256*256 {
		t.Fatalf("plan %+v: want sampling, bf16, 256 rollouts in groups of 8, 4096 tokens in 256 blocks of 16 each", p)
	}
	// A group of 8 on a 256-token prompt reserves 15 shared blocks + 8 × 241.
	perGroup := 15 + 8*241
	if !p.Bounded || p.Cap <= 0 || p.Cap >= 256 || p.Cap%8 != 0 || p.Blocks < p.Cap/8*perGroup || p.Blocks >= (p.Cap/8+1)*perGroup || p.Passes != 2 {
		t.Errorf("plan %+v: want the pool cut to the free memory, the whole groups it holds as the cap, and 2 passes", p)
	}
	t.Logf("cap %d of 256 rollouts at once, %d blocks (%.1f GiB), %d passes, peak %.1f GiB", p.Cap, p.Blocks, float64(p.Bytes)/(1<<30), p.Passes, float64(got.PeakBytes)/(1<<30))
	code, text2, _ := runCaptured(t, "estimate", path, "--shape", "qwen3-8b", "--device", "cuda", "--no-measure")
	if code != 0 || !strings.Contains(text2, "KV cache plan:") || !strings.Contains(text2, "rollouts at once") {
		t.Errorf("the table does not show the KV plan:\n%s", text2)
	}
}

// TestEstimateOfflineNamesShape: offline with the model not cached, the
// error says how to estimate anyway — --shape, with the model's own shape
// when grpo knows it (issue 27).
func TestEstimateOfflineNamesShape(t *testing.T) {
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "1")
	code, _, errOut := runCaptured(t, "estimate", writeConfig(t, "Qwen/Qwen3-1.7B"), "--no-measure")
	if code == 0 || !strings.Contains(errOut, "not in the cache") || !strings.Contains(errOut, "grpo estimate CONFIG --shape qwen3-1.7b (shapes: ") ||
		strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("exit %d: %q", code, errOut)
	}
}

// TestEstimateExpertParallelPlan: grpo estimate --devices prints the
// expert-parallel layout, the why line and each device's experts for
// Qwen3.5-122B-A10B on 4 H200s, and refuses 2 of them (exit 1) naming
// the device and its largest item.
func TestEstimateExpertParallelPlan(t *testing.T) {
	t.Setenv(estimate.FakeMemAvailableEnv, "139G")
	path := writeConfig(t, "Qwen/Qwen3.5-122B-A10B")
	code, out, errOut := runCaptured(t, "estimate", path, "--shape", "qwen3.5-122b-a10b", "--devices", "cuda:0-3", "--no-measure")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"expert parallel over 4 devices, EP 4 × DP 1", "\nwhy: expert parallel, EP 4 × DP 1: EP 1 needs ",
		"resident  routed experts", "all-to-all buffers (expert parallel)", "  cuda:3: 8 groups; experts 192–255; resident "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	code, out, errOut = runCaptured(t, "estimate", path, "--shape", "qwen3.5-122b-a10b", "--devices", "cuda:0-1", "--no-measure")
	if code != 1 || !strings.Contains(out, "why: no layout fits (EP 2 × DP 1 is the largest split)") ||
		!strings.Contains(errOut, "cuda:0 does not fit: it needs") || !strings.Contains(errOut, "its largest item is resident routed experts") {
		t.Errorf("2 devices: exit %d\n%s\n%s", code, out, errOut)
	}
}
