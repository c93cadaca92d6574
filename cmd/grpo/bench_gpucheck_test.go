package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gpuCheckSteps are the steps scripts/gpu-check.sh run reports, in order.
var gpuCheckSteps = []string{"smoke", "environment", "conformance-forward", "conformance-train", "conformance-sample",
	"full-model", "nccl", "bench-b1", "bench-b64", "bench-b256", "profile", "torch-ref",
	"sanitizer-memcheck", "sanitizer-racecheck", "ncu-attention", "train"}

// gpuBarSteps are the steps scripts/gpu-check.sh run bars reports, in
// order: the smoke step (as in run), the measured ceilings, then one line
// per open bar (issue 13's decode roofline share, issue 18's whole GRPO
// step against PyTorch), the train MFU at a small shape, then issue 18's
// 8B train MFU.
var gpuBarSteps = []string{"smoke", "environment", "ceilings", "bar13-decode",
	"bar18-step-grpo", "bar18-step-torch", "bar18-step", "mfu-small", "bar18-mfu"}

// TestGPUCheckWithoutGPU runs scripts/gpu-check.sh run and run bars on
// this machine, which has no GPU: every step must be reported failed with
// its reason, the smoke step first, each results file (at most 10,000
// characters, one line per step) must be the last thing on stdout, only
// it, its log and the work archive may be left in $OUT, and each run must end before the shortest step limit (20 s,
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
		{[]string{"run"}, "gpu-check", gpuCheckSteps, map[string]string{"smoke": "no GPU", "torch-ref": "no GPU"}},
		{[]string{"run", "bars"}, "gpu-check-bars", gpuBarSteps, map[string]string{
			"smoke": "no GPU", "ceilings": "no GPU", "bar18-step-torch": "no GPU",
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
	if strings.Join(names, " ") != prefix+"-log.txt "+prefix+"-results.txt "+prefix+"-work.tar.gz" {
		t.Errorf("$OUT holds %v, want only %s-results.txt, %s-log.txt and %s-work.tar.gz", names, prefix, prefix, prefix)
	}
	// The archive holds what the steps wrote: here, where nothing ran,
	// what the environment step found.
	list, err := exec.Command("tar", "-tzf", filepath.Join(out, prefix+"-work.tar.gz")).Output()
	if err != nil || !strings.Contains(string(list), "./environment.txt\n") {
		t.Errorf("work archive: %v, holding\n%s", err, list)
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

// fakeGPUTools are stand-ins for what `run bars` calls on the GPU machine,
// with figures chosen so that each verdict and share can be worked out by
// hand: nvidia-smi naming an H200, python3 giving the ceilings (4.3 TB/s,
// 780 TFLOP/s) and the PyTorch step (3.0 s), and the grpo binary giving
// grpo estimate's recompute choice, the b128 decode (64.0625 % of 4.8 TB/s,
// 3075 GB/s), the 8B train rate (12,000 tok/s, only at the estimate's
// recompute setting) and the GRPO step (1.5 s).
var fakeGPUTools = map[string]string{
	"nvidia-smi": `case "$*" in
-L) echo "GPU 0: NVIDIA H200 (UUID: GPU-0)" ;;
--query-gpu*) echo "NVIDIA H200, 580.159.04, 143771 MiB, 9.0" ;;
*) echo "| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |" ;;
esac`,
	"python3": `case "$1" in
-c) echo "torch 2.11.0 cuda 13.0 transformers 5.17.0 peft 0.18.0" ;;
-) grep -q copy_TBps && echo '{"copy_TBps": 4.3, "gemm_TFLOPs": 780.0, "gemm_rel_err": 0.002}' ;;
scripts/grpo_step_torch.py) echo '{"engine": "torch-peft", "torch": "2.11.0", "transformers": "5.17.0", "peft": "0.18.0", "build_s": 4.2, "generate_s": 2.5, "train_s": 0.5, "step_s": 3.0}' ;;
*) exit 9 ;;
esac`,
	"grpo-cuda": `case "$*" in
estimate*) printf '{\n  "recompute": "selective+layer:9",\n  "recompute_reason": "auto"\n}\n' ;;
*--grpo-step*) echo '{"engine":"grpo","gen_tokens":2048,"generate_s":1.1,"train_s":0.4,"step_s":1.5}' ;;
*"--batch 128"*) echo '{"results":[{"name":"prefill 128x512","value":90000,"unit":"tok/s"},{"name":"decode batch 128","value":9000,"unit":"tok/s"},{"name":"decode batch 128 HBM","value":3075,"unit":"GB/s"},{"name":"decode batch 128 of HBM peak","value":64.0625,"unit":"%"}]}' ;;
*"--train-len 1024 --recompute none "*) echo '{"results":[{"name":"lora train 4x1024 r16 recompute none","value":50000,"unit":"tok/s"},{"name":"lora train 4x1024 MFU of bf16 peak","value":20,"unit":"%"},{"name":"lora train 4x1024 TFLOP/s at 4N","value":150,"unit":"TFLOP/s"}]}' ;;
*"--train-len 4096 --recompute selective+layer:9 "*) echo '{"results":[{"name":"lora train 4x4096 r16 recompute selective+layer:9","value":12000,"unit":"tok/s"},{"name":"lora train 4x4096 MFU of bf16 peak","value":44,"unit":"%"},{"name":"lora train 4x4096 TFLOP/s at 4N","value":363.27,"unit":"TFLOP/s"}]}' ;;
*) echo "fake grpo: unexpected arguments $*" >&2; exit 3 ;;
esac`,
}

// TestGPUCheckBarsVerdicts runs scripts/gpu-check.sh run bars against
// fakeGPUTools: each bar line must carry its verdict and the shares worked
// out by hand from the fakes' figures (against the datasheet and against
// the measured ceilings), bar18-mfu must train at grpo estimate's recompute
// choice, and the exit status must be 1 because one bar (the 8B MFU,
// 36.7 % at 4N < 45 %) is not met.
func TestGPUCheckBarsVerdicts(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	bin, built := filepath.Join(dir, "bin"), filepath.Join(dir, "built")
	for _, d := range []string{bin, built} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range fakeGPUTools {
		script := []byte("#!/bin/bash\n" + body + "\n")
		if name == "grpo-cuda" {
			writeGzip(t, filepath.Join(built, "grpo-cuda.gz"), script)
			writeGzip(t, filepath.Join(built, "cuda.test.gz"), []byte("#!/bin/sh\ncase \"$*\" in *TestSmokeOnGPU*) echo '    smoke_test.go:40: smoke: driver CUDA 13.0, sm90, 132 SMs, 227 KiB shared memory per block by opt-in'; echo '    smoke_test.go:48: smoke: 31 kernel modules loaded in 0.2s, 31 from cubins'; exit 0 ;; esac\nexit 1\n"))
			writeGzip(t, filepath.Join(built, "modeltest.test.gz"), []byte("#!/bin/sh\nexit 1\n"))
			continue
		}
		if err := os.WriteFile(filepath.Join(bin, name), script, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	libcuda, cublas := filepath.Join(dir, "libcuda.so.1"), filepath.Join(dir, "libcublas.so.13")
	for _, f := range []string{libcuda, cublas} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	cmd := exec.Command("bash", "../../scripts/gpu-check.sh", "run", "bars")
	cmd.Env = append(os.Environ(), "OUT="+out, "GPU_CHECK_DIR="+built, "PATH="+bin+":"+os.Getenv("PATH"),
		"GRPO_LIBCUDA="+libcuda, "GRPO_CUBLAS="+cublas)
	stdout, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1 (bar18-mfu not met)\n%s", err, stdout)
	}
	res, err := os.ReadFile(filepath.Join(out, "gpu-check-bars-results.txt"))
	if err != nil {
		t.Fatalf("no results: %v\n%s", err, stdout)
	}
	want := []struct{ step, verdict, text string }{
		{"smoke", "PASS", "driver CUDA 13.0, sm90, 132 SMs, 227 KiB shared memory per block by opt-in;31 kernel modules loaded in 0.2s, 31 from cubins"},
		{"environment", "PASS", "NVIDIA H200"},
		{"ceilings", "PASS", "4.30 TB/s D2D copy, read + write (datasheet 4.8); 780 TFLOP/s bf16 GEMM 8192³ (datasheet 989)"},
		// 64.0625 % of 4.8 TB/s; 3.075 / 4.3 = 71.5 %.
		{"bar13-decode", "PASS", "64.1 % of 4.8 TB/s (71.5 % of measured 4.3 TB/s): 3075 GB/s of weight + KV reads, 9000 tok/s; bar: ≥ 60 %"},
		{"bar18-step-grpo", "PASS", "step 1.5 s: generate 1.1 s, train 0.4 s; 2048 tokens sampled"},
		{"bar18-step-torch", "PASS", "step 3.0 s: generate 2.5 s, train 0.5 s; torch: 2.11.0 transformers: 5.17.0 peft: 0.18.0"},
		{"bar18-step", "PASS", "grpo 1.5 s against PyTorch + PEFT 3.0 s per GRPO step at the Qwen3-8B shape: 0.50× PyTorch's time; bar: grpo < PyTorch"},
		// 150 / 989 = 15.2 %, 150 / 780 = 19.2 %.
		{"mfu-small", "PASS", "4N MFU 15.2 % of 989 TFLOP/s (19.2 % of measured 780 TFLOP/s): 150.0 TFLOP/s, 50000 tok/s; with attention 20.0 %; no bar"},
		// 4 × 8,190,735,360 × 12,000 = 393.2 TFLOP/s: 39.8 % of 989, 50.4 % of 780.
		{"bar18-mfu", "FAIL", "4N MFU 36.7 % of 989 TFLOP/s (46.6 % of measured 780 TFLOP/s): 363.3 TFLOP/s, 12000 tok/s, recompute selective+layer:9 (grpo estimate's choice here); with attention 44.0 %; bar: ≥ 45 %"},
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(res)), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(want) {
		t.Fatalf("%d step lines, want %d:\n%s", len(lines), len(want), res)
	}
	for i, w := range want {
		f := strings.SplitN(lines[i], " | ", 4)
		if len(f) != 4 || f[0] != w.step || f[1] != w.verdict || !strings.Contains(f[3], w.text) {
			t.Errorf("line %d:\n  %s\nwant %s | %s | … %s …", i, lines[i], w.step, w.verdict, w.text)
		}
	}
	if !strings.Contains(string(res), "failed: bar18-mfu\n") {
		t.Errorf("the total line does not name bar18-mfu alone as failed:\n%s", res)
	}
	t.Logf("with the fakes:\n%s", res)
}

func writeGzip(t *testing.T, path string, data []byte) {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
