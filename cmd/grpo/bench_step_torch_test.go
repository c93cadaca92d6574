package main

import (
	"encoding/json"
	"math"
	"os/exec"
	"strings"
	"testing"
)

// torchPython is Debian's python3 when it can import torch (python3-torch:
// scripts/install-deps.sh) and modules; otherwise the test is skipped with
// the import error.
func torchPython(t *testing.T, modules ...string) string {
	t.Helper()
	py := "/usr/bin/python3"
	imp := "import " + strings.Join(append([]string{"torch"}, modules...), ", ")
	if out, err := exec.Command(py, "-c", imp).CombinedOutput(); err != nil {
		t.Skipf("%s -c %q: %v %s", py, imp, err, lastLine(string(out)))
	}
	return py
}

func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}

// stepTorchCheck runs scripts/grpo_step_torch.py --check with args and
// checks the work it reports: every rollout of the tiny shape's 2 prompts
// × 3 rollouts sampled exactly 7 tokens, through the model it names, with a
// finite loss and gradient norm (the script itself asserts the forward
// matches testdata/reference's, whole-sequence and through the cache,
// within 1e-5 of the logits' norm, and that AdamW moved the adapter).
func stepTorchCheck(t *testing.T, py, impl string, args ...string) {
	t.Helper()
	cmd := exec.Command(py, append([]string{"../../scripts/grpo_step_torch.py", "--check", "--threads", "1", "--impl", impl}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("grpo_step_torch.py --check --impl %s: %v\n%s", impl, err, msg)
	}
	var r struct {
		Impl      string  `json:"impl"`
		GenTokens int     `json:"gen_tokens"`
		NewTokens int     `json:"new_tokens"`
		Loss      float64 `json:"loss"`
		GradNorm  float64 `json:"grad_norm"`
		StepS     float64 `json:"step_s"`
	}
	if err := json.Unmarshal([]byte(lastLine(string(out))), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Impl != impl || r.GenTokens != 2*3*7 || r.NewTokens != 7 || math.IsNaN(r.Loss) || math.IsInf(r.Loss, 0) ||
		!(r.GradNorm > 0) || math.IsInf(r.GradNorm, 0) || !(r.StepS > 0) {
		t.Errorf("--impl %s reported %+v: want impl %s, 42 tokens sampled (2 × 3 × 7), a finite loss, a positive finite grad norm and a step time", impl, r, impl)
	}
}

// TestGRPOStepTorchCheck is the PyTorch twin of `grpo bench --grpo-step`
// on a tiny shape on the CPU: the plain-PyTorch model always (with
// python3-torch), the transformers + PEFT model (issue 18's GPU twin, run
// by scripts/gpu-check.sh run bars) where this python has both packages;
// and the twin refuses a GPU for the plain model with one line naming the
// fix.
func TestGRPOStepTorchCheck(t *testing.T) {
	py := torchPython(t)
	t.Run("own", func(t *testing.T) { stepTorchCheck(t, py, "own") })
	t.Run("peft", func(t *testing.T) {
		stepTorchCheck(t, torchPython(t, "transformers", "peft"), "peft")
	})
	t.Run("own-on-cuda", func(t *testing.T) {
		out, err := exec.Command(py, "../../scripts/grpo_step_torch.py", "--impl", "own", "--device", "cuda").CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--impl own --device cuda: the plain-PyTorch model runs on the CPU only; use --impl peft") {
			t.Errorf("exit %v, output %q: want status 2 and the line naming --impl peft", err, out)
		}
	})
}
