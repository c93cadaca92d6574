//go:build slow

// The data-parallel comparison on emulated CUDA devices: about 25 s (the
// emulated training kernels), so CI runs it with -tags slow and
// `go test ./...` does not; the cpu comparison (dataparallel_test.go)
// runs in every go test, and so does the emu count of a step's
// collectives (trainer/replicas).

package trainer

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/emu"
)

// TestDataParallelOnEmu: two emulated CUDA devices in one process train as
// one emulated device does, to the same bounds.
func TestDataParallelOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("emu runs of 3 steps")
	}
	t.Setenv("GRPO_CHECK_REPLICAS", "1")
	dir := t.TempDir()
	writeDPFixture(t, dir, 8, 0)
	e0, e1, e2 := emu.New(), emu.New(), emu.New()
	defer e0.Close()
	defer e1.Close()
	defer e2.Close()
	one := runDevices(t, dir, "one", nil, 0, nil, WithBackend(e0))
	two := runDevices(t, dir, "two", nil, 0, nil, WithBackends(e1, e2))
	sameRun(t, "emu:0-1", two, one, 1e-5)
}
