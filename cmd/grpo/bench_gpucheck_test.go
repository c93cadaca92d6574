package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gpuCheckSteps are the steps scripts/gpu-check.sh run reports, in order.
var gpuCheckSteps = []string{"environment", "conformance-forward", "conformance-train", "conformance-sample",
	"full-model", "bench-b1", "bench-b64", "bench-b128", "bench-b256", "torch-ref",
	"sanitizer-memcheck", "sanitizer-racecheck", "train"}

// TestGPUCheckWithoutGPU runs scripts/gpu-check.sh run on this machine,
// which has no GPU: every step must be reported failed with its reason, the
// results file (at most 10,000 characters, one line per step) must be the
// last thing on stdout, only it and the log may be left in $OUT, and all
// of it within 10 seconds. Without GRPO_GPU_CHECK_BUILT the build is not
// carried (each step says so); CI sets it to a `make gpu-check` directory,
// so the real -tags cuda binaries start and fail at cuInit.
func TestGPUCheckWithoutGPU(t *testing.T) {
	if err := exec.Command("nvidia-smi", "-L").Run(); err == nil {
		t.Skip("this machine has a GPU: scripts/gpu-check.sh run is the real check here")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	out := t.TempDir()
	built := os.Getenv("GRPO_GPU_CHECK_BUILT")
	if built == "" {
		built = t.TempDir() // empty: nothing carried
	}
	cmd := exec.Command("bash", "../../scripts/gpu-check.sh", "run")
	cmd.Env = append(os.Environ(), "OUT="+out, "GPU_CHECK_DIR="+built)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stdout
	t0 := time.Now()
	err := cmd.Run()
	took := time.Since(t0)
	if took > 10*time.Second {
		t.Errorf("gpu-check run took %v without a GPU, want under 10 s", took)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1 (steps failed)", err)
	}
	res, rerr := os.ReadFile(filepath.Join(out, "gpu-check-results.txt"))
	if rerr != nil {
		t.Fatalf("no results file: %v\n%s", rerr, stdout.String())
	}
	if len(res) > 10000 {
		t.Errorf("results file has %d characters, over 10,000", len(res))
	}
	if !strings.HasSuffix(stdout.String(), string(res)) {
		t.Errorf("stdout does not end with the results file:\n%s", stdout.String())
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("$OUT holds %v, want only gpu-check-results.txt and gpu-check-log.txt", names)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(res)), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(gpuCheckSteps) {
		t.Fatalf("%d step lines, want %d:\n%s", len(lines), len(gpuCheckSteps), res)
	}
	for i, l := range lines {
		f := strings.SplitN(l, " | ", 4)
		if len(f) != 4 || f[0] != gpuCheckSteps[i] || f[1] != "FAIL" || !strings.HasSuffix(f[2], "s") || len(strings.TrimSpace(f[3])) < 10 {
			t.Errorf("line %d %q: want %q | FAIL | seconds | reason", i, l, gpuCheckSteps[i])
		}
	}
	t.Logf("%v without a GPU:\n%s", took.Round(time.Millisecond), res)
}
