package main

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/estimate"
)

// TestDevicesFlagRefusesBadList: a malformed --devices list is refused
// naming the flag and the fault.
func TestDevicesFlagRefusesBadList(t *testing.T) {
	cfg := writeConfig(t, "Qwen/Qwen3-0.6B")
	code, _, errOut := runCaptured(t, "train", cfg, "--devices", "cuda:0,cuda:0")
	if code == 0 || !strings.Contains(errOut, "--devices cuda:0,cuda:0: cuda:0 is named twice") {
		t.Errorf("duplicate: exit %d, %q", code, errOut)
	}
}

// TestEstimateDevices: grpo estimate --devices prints a line per device
// with its share of the step's groups (32 groups on 3 devices: 11, 11,
// 10) and exits 0 when each fits; with too little memory it exits 1 naming
// what does not fit.
func TestEstimateDevices(t *testing.T) {
	cfg := writeConfig(t, "Qwen/Qwen3-0.6B")
	t.Setenv(estimate.FakeMemAvailableEnv, "1T")
	code, out, errOut := runCaptured(t, "estimate", cfg, "--shape", "qwen3-0.6b", "--no-measure", "--devices", "cpu:0-2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"data parallel over 3 devices", "cpu:0: 11 groups", "cpu:1: 11 groups", "cpu:2: 10 groups"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	t.Setenv(estimate.FakeMemAvailableEnv, "4G")
	code, _, errOut = runCaptured(t, "estimate", cfg, "--shape", "qwen3-0.6b", "--no-measure", "--devices", "cpu:0-2")
	if code == 0 || !strings.Contains(errOut, "3 cpu replicas need") {
		t.Errorf("4G: exit %d, %q", code, errOut)
	}
}

// TestServeDevicesLoadsEachReplica: grpo serve --devices cpu:0-1 builds a
// replica on each device and only then listens (the host is not this
// machine's, so it stops there instead of serving forever); a replica
// that cannot be built is named by its device.
func TestServeDevicesLoadsEachReplica(t *testing.T) {
	tiny := tinyModelDir(t)
	code, _, stderr := runCLI("serve", tiny, "--devices", "cpu:0-1", "--host", "192.0.2.1")
	if code != 1 || !strings.Contains(stderr, "listening on 192.0.2.1") {
		t.Errorf("2 replicas: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI("serve", tiny, "--devices", "cpu:0-1", "--max-len", "100000", "--host", "192.0.2.1")
	if code != 1 || !strings.Contains(stderr, "cpu: ") || !strings.Contains(stderr, "--max-len") {
		t.Errorf("--max-len past the context: exit %d: %s", code, stderr)
	}
}
