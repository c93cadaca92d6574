package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/bench"
	_ "github.com/grpo-dev/grpo/kernels/emu" // the cuda backend on the emulated device
	"github.com/grpo-dev/grpo/model"
)

// TestBenchProfileFlag: bench --help documents --profile (the flag, what
// it times, the cpu error, the JSON key); on the cpu backend --profile is
// one usage line naming the devices that can; under emu the table shows
// each phase's reconciliation line and entries, and --json carries every
// phase's profile with entries whose launches sum to the phase's counts.
func TestBenchProfileFlag(t *testing.T) {
	code, out, _ := runCLI("bench", "--help")
	for _, want := range []string{"--profile", "op by op", "timing events", `"profile"`, "wall_ms", "is an error: the cpu backend", "Under emu the times"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("bench --help (exit %d) lacks %q", code, want)
		}
	}
	const shape = "test-profile-tiny"
	model.Shapes[shape] = tinyStepShape
	defer delete(model.Shapes, shape)
	code, _, stderr := runCLI("bench", "--shape", shape, "--device", "cpu", "--profile")
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "--profile times the kernels") || !strings.Contains(stderr, "--device cuda") {
		t.Errorf("--profile on cpu: exit %d, %q; want one usage line", code, stderr)
	}
	text := string(emuProfileOutput(t, shape, false))
	t.Logf("the table:\n%s", text)
	for _, want := range []string{"profile of prefill 2x4: wall", "profile of decode step batch 2 (graph replay)", "profile of decode step batch 2 (op by op)",
		"profile of train micro-batch 1x8", "GPU idle between ops", "KERNEL", "MEAN µs", "graph (", "rmsnorm"} {
		if !strings.Contains(text, want) {
			t.Errorf("the table lacks %q:\n%s", want, text)
		}
	}
	var res struct {
		Profile []struct {
			Phase   string  `json:"phase"`
			WallMs  float64 `json:"wall_ms"`
			SpanMs  float64 `json:"span_ms"`
			Kernels []struct {
				Name     string  `json:"name"`
				Launches int64   `json:"launches"`
				Ms       float64 `json:"ms"`
			} `json:"kernels"`
			Counts struct {
				Launches      int64 `json:"launches"`
				GEMMs         int64 `json:"gemms"`
				Memsets       int64 `json:"memsets"`
				GraphLaunches int64 `json:"graph_launches"`
				HtoD          int64 `json:"htod_copies"`
				DtoH          int64 `json:"dtoh_copies"`
			} `json:"counts"`
		} `json:"profile"`
	}
	js := string(emuProfileOutput(t, shape, true))
	if err := json.Unmarshal([]byte(js), &res); err != nil {
		t.Fatalf("%v in %s", err, js)
	}
	if len(res.Profile) != 4 {
		t.Fatalf("%d phases in the JSON profile, want 4: %s", len(res.Profile), js)
	}
	for _, p := range res.Profile {
		var sum int64
		for _, k := range p.Kernels {
			if k.Name != "copy DtoD" {
				sum += k.Launches
			}
		}
		c := p.Counts
		if want := c.Launches + c.GEMMs + c.Memsets + c.GraphLaunches + c.HtoD + c.DtoH; sum != want || !(p.WallMs >= p.SpanMs) || p.SpanMs <= 0 {
			t.Errorf("%s: entries' launches %d, counts' %d; wall %v ms, span %v ms", p.Phase, sum, want, p.WallMs, p.SpanMs)
		}
	}
}

// TestProfileSummaryLine: scripts/profile-summary.sh, which writes the GPU
// check's profile line, reads a real --profile --json output (emu): the
// train micro-batch first with its top entries (the JSON's largest
// first), the rest summed as "(N more)", then the op-by-op decode step's,
// then the graph replay's and the prefill's totals; and it fails, saying
// so, on output without a profile.
func TestProfileSummaryLine(t *testing.T) {
	const shape = "test-profile-line"
	model.Shapes[shape] = tinyStepShape
	defer delete(model.Shapes, shape)
	profileJSON := emuProfileOutput(t, shape, true)
	var res struct {
		Profile []bench.PhaseProfile `json:"profile"`
	}
	if err := json.Unmarshal(profileJSON, &res); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "profile.out")
	if err := os.WriteFile(file, profileJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "../../scripts/profile-summary.sh", file, "3").Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	line := strings.TrimSpace(string(out))
	t.Logf("%d characters: %s", len(line), line)
	parts := strings.Split(line, " | ")
	if len(parts) != 4 {
		t.Fatalf("%d phases in %q, want 4", len(parts), line)
	}
	byPhase := map[string]bench.PhaseProfile{}
	for _, p := range res.Profile {
		byPhase[p.Phase] = p
	}
	for i, name := range []string{"train micro-batch 1x8", "decode step batch 2 (op by op)", "prefill 2x4", "decode step batch 2 (graph replay)"} {
		p := byPhase[name]
		j := slices.IndexFunc(parts, func(s string) bool { return strings.HasPrefix(s, name+": wall ") })
		if j < 0 || (i < 2 && j != i) {
			t.Errorf("phase %q at %d in %q", name, j, line)
			continue
		}
		want := fmt.Sprintf("wall %.4g ms, kernels %.4g (%.0f%%), idle %.3g", p.WallMs, p.KernelMs, 100*p.KernelMs/p.WallMs, p.SpanMs-p.KernelMs)
		if !strings.Contains(parts[j], want) {
			t.Errorf("%s: %q lacks %q", name, parts[j], want)
		}
		if i < 2 {
			k := p.Kernels[0]
			top := fmt.Sprintf(": %s %.3g %.0f%%; ", k.Name, k.Ms, 100*k.Ms/p.WallMs)
			more := fmt.Sprintf("; (%d more) ", len(p.Kernels)-3)
			if !strings.Contains(parts[j], top) || !strings.Contains(parts[j], more) || strings.Count(parts[j], "; ") != 3 {
				t.Errorf("%s: %q: want %q first, 3 entries and %q", name, parts[j], top, more)
			}
		}
	}
	if err := os.WriteFile(file, []byte(`{"results":[{"name":"x","value":1,"unit":"tok/s"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "../../scripts/profile-summary.sh", file).Output(); err == nil || !strings.Contains(string(out), "no profile") {
		t.Errorf("output without a profile: %v, %q", err, out)
	}
}

// TestGPUCheckProfileStep runs scripts/gpu-check.sh run with stand-ins
// for the GPU machine's tools (fakeGPUTools' nvidia-smi and python3,
// failing test binaries, sanitizer and ncu) and a grpo binary that answers
// the profile step's command, and only it, with a real --profile --json
// output (emu): the profile line must pass with profile-summary.sh's line
// of that output, whole (under 900 characters), and the other steps fail
// as they would.
func TestGPUCheckProfileStep(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	const shape = "test-profile-check"
	model.Shapes[shape] = tinyStepShape
	defer delete(model.Shapes, shape)
	profileJSON := emuProfileOutput(t, shape, true)
	dir := t.TempDir()
	bin, built, profile := filepath.Join(dir, "bin"), filepath.Join(dir, "built"), filepath.Join(dir, "profile.json")
	for _, d := range []string{bin, built} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(profile, profileJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	tools := map[string]string{"nvidia-smi": fakeGPUTools["nvidia-smi"], "python3": fakeGPUTools["python3"],
		"compute-sanitizer": "exit 1", "ncu": "exit 1"}
	for name, body := range tools {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/bash\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	grpo := `case "$*" in
"bench --device cuda --shape qwen3-0.6b --batch 64 --prefill 512 --decode 16 --train-seqs 4 --train-len 1024 --repeat 1 --no-matmul --profile --json") cat '` + profile + `' ;;
*) echo "fake grpo: not the profile step: $*" >&2; exit 3 ;;
esac`
	writeGzip(t, filepath.Join(built, "grpo-cuda.gz"), []byte("#!/bin/bash\n"+grpo+"\n"))
	writeGzip(t, filepath.Join(built, "cuda.test.gz"), []byte("#!/bin/sh\nexit 1\n"))
	writeGzip(t, filepath.Join(built, "modeltest.test.gz"), []byte("#!/bin/sh\nexit 1\n"))
	libcuda, cublas := filepath.Join(dir, "libcuda.so.1"), filepath.Join(dir, "libcublas.so.13")
	for _, f := range []string{libcuda, cublas} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	cmd := exec.Command("bash", "../../scripts/gpu-check.sh", "run")
	cmd.Env = append(os.Environ(), "OUT="+out, "GPU_CHECK_DIR="+built, "PATH="+bin+":"+os.Getenv("PATH"),
		"GRPO_LIBCUDA="+libcuda, "GRPO_CUBLAS="+cublas)
	stdoutErr, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1 (the other steps fail)\n%s", err, stdoutErr)
	}
	res, err := os.ReadFile(filepath.Join(out, "gpu-check-results.txt"))
	if err != nil {
		t.Fatalf("no results: %v\n%s", err, stdoutErr)
	}
	summary, err := exec.Command("bash", "../../scripts/profile-summary.sh", profile, "8").Output()
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(res), "\n") {
		if strings.HasPrefix(l, "profile | ") {
			line = l
		}
	}
	f := strings.SplitN(line, " | ", 4)
	if len(f) != 4 || f[1] != "PASS" || f[3] != strings.TrimSpace(string(summary)) || len(f[3]) > 900 {
		t.Errorf("profile line:\n  %s\nwant PASS and the summary (%d characters):\n  %s\nresults:\n%s", line, len(summary), summary, res)
	}
	if n := strings.Count(string(res), " | PASS | "); n != 2 {
		t.Errorf("%d steps passed, want 2 (environment and profile; every other step's tool fails):\n%s", n, res)
	}
}

// emuProfileOutput is what `grpo bench --profile` on emu prints (the table,
// or with asJSON the JSON) for the registered shape: a prefill of 2x4, 2
// decode steps and a 1x8 train micro-batch.
func emuProfileOutput(t *testing.T, shape string, asJSON bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	old := stdout
	stdout = &buf
	defer func() { stdout = old }()
	err := runBench(benchOpts{shape: shape, device: "emu", dtype: "auto", json: asJSON, Options: bench.Options{Prefill: 4, Decode: 2, Batch: 2, Repeat: 1,
		PrefillChunk: 64, Temperature: 1, TrainSeqs: 1, TrainLen: 8, LoRARank: 4, NoMatmul: true, Profile: true}})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
