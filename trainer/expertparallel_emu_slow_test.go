//go:build slow

// The expert-parallel run on emulated CUDA devices: two emulated runs of
// 3 MoE steps, so CI runs it with -tags slow; the cpu comparison
// (expertparallel_test.go) runs in every go test.

package trainer

import (
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestExpertParallelRunOnEmu: a run of the tiny Qwen3-MoE on two emulated
// CUDA devices under expert_parallel = 2 — each rank's sampler decoding
// in graphs with its all-to-alls captured (model/decode_ep.go) — trains
// as one emulated device does, to the cpu comparison's bounds.
func TestExpertParallelRunOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("emu runs of 3 steps")
	}
	t.Setenv("GRPO_CHECK_REPLICAS", "1")
	dir := t.TempDir()
	writeEPFixture(t, dir, 8)
	e0, e1, e2 := emu.New(), emu.New(), emu.New()
	defer e0.Close()
	defer e1.Close()
	defer e2.Close()
	one := runDevicesWith(t, dir, "one", epHeader, nil, 0, nil, WithBackend(e0))
	// The config names two cpu devices (emu is not a device a config
	// names); the backends given are the run's.
	two := runDevicesWith(t, dir, "two", epHeader, []string{"cpu:0-1"}, 0, nil, WithBackends(e1, e2))
	sameRun(t, "emu EP 2", two, one, 1e-5)
	logHas(t, filepath.Join(dir, "two"), "layout: expert parallel over 2 devices, EP 2 × DP 1")
	sameEvals(t, dir, "two", "one")
}
