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
	"full-model", "bench-b1", "bench-b64", "bench-b256", "torch-ref",
	"sanitizer-memcheck", "sanitizer-racecheck", "train"}

// gpuBarSteps are the steps scripts/gpu-check.sh run bars reports, in
// order: the measured ceilings, then one line per open bar (issue 13's
// decode roofline share, issue 18's 8B train MFU and whole GRPO step).
var gpuBarSteps = []string{"environment", "ceilings", "bar13-decode", "bar18-mfu",
	"bar18-step-grpo", "bar18-step-torch", "bar18-step"}

// TestGPUCheckWithoutGPU runs scripts/gpu-check.sh run and run bars on
// this machine, which has no GPU: every step must be reported failed with
// its reason, each results file (at most 10,000 characters, one line per
// step) must be the last thing on stdout, only it and its log may be left
// in $OUT, and each run must end before the shortest step limit (20 s,
// bar18-estimate's): a step that waited for its limit instead of failing
// at once would take longer. (`run` took 1.4 s with the binaries on an
// idle machine; on a shared 2-core machine under a load of 10, 11 to 14 s,
// nearly all of it waiting for a core.) Without
// GRPO_GPU_CHECK_BUILT the build is not carried (each step says so); CI
// sets it to a `make gpu-check` directory, so the real -tags cuda binaries
// start and fail at cuInit.
func TestGPUCheckWithoutGPU(t *testing.T) {
	if err := exec.Command("nvidia-smi", "-L").Run(); err == nil {
		t.Skip("this machine has a GPU: scripts/gpu-check.sh run is the real check here")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	built := os.Getenv("GRPO_GPU_CHECK_BUILT")
	if built == "" {
		built = t.TempDir() // empty: nothing carried
	}
	for _, c := range []struct {
		args   []string
		prefix string
		steps  []string
		why    map[string]string // a step's reason must contain this
	}{
		{[]string{"run"}, "gpu-check", gpuCheckSteps, map[string]string{"torch-ref": "no GPU"}},
		{[]string{"run", "bars"}, "gpu-check-bars", gpuBarSteps, map[string]string{
			"ceilings": "no GPU", "bar18-step-torch": "no GPU",
			"bar18-step": "not decided: the grpo step"}},
	} {
		t.Run(strings.Join(c.args, "-"), func(t *testing.T) {
			checkGPUCheckRun(t, built, c.args, c.prefix, c.steps, c.why)
		})
	}
}

func checkGPUCheckRun(t *testing.T, built string, args []string, prefix string, steps []string, why map[string]string) {
	out := t.TempDir()
	cmd := exec.Command("bash", append([]string{"../../scripts/gpu-check.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "OUT="+out, "GPU_CHECK_DIR="+built)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stdout
	t0 := time.Now()
	err := cmd.Run()
	took := time.Since(t0)
	if took > 20*time.Second {
		t.Errorf("gpu-check %v took %v without a GPU, want under 20 s (the shortest step limit)", args, took)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1 (steps failed)", err)
	}
	res, rerr := os.ReadFile(filepath.Join(out, prefix+"-results.txt"))
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
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != prefix+"-log.txt "+prefix+"-results.txt" {
		t.Errorf("$OUT holds %v, want only %s-results.txt and %s-log.txt", names, prefix, prefix)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(res)), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(steps) {
		t.Fatalf("%d step lines, want %d:\n%s", len(lines), len(steps), res)
	}
	for i, l := range lines {
		f := strings.SplitN(l, " | ", 4)
		if len(f) != 4 || f[0] != steps[i] || f[1] != "FAIL" || !strings.HasSuffix(f[2], "s") || len(strings.TrimSpace(f[3])) < 10 {
			t.Errorf("line %d %q: want %q | FAIL | seconds | reason", i, l, steps[i])
			continue
		}
		if w, ok := why[f[0]]; ok && !strings.Contains(f[3], w) {
			t.Errorf("%s: reason %q, want it to say %q", f[0], f[3], w)
		}
	}
	t.Logf("%v without a GPU:\n%s", took.Round(time.Millisecond), res)
}
