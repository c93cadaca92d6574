package estimate

import (
	"context"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// TestPlanDevices: 4 groups on 3 cpu replicas split 2, 1, 1; every device
// holds the same resident items (weights, adapter, optimizer state) as one
// device running the whole batch, and each device's sampling items equal a
// single-device run of its share of the batch (estimate's own pricing);
// the replicas' peaks are checked together against the host's memory; a
// GPU device whose peak exceeds its free memory is named with the largest
// item; more devices than groups is refused.
func TestPlanDevices(t *testing.T) {
	t.Setenv(FakeMemAvailableEnv, "64G")
	ctx := context.Background()
	cfg := estimateConfig(16, 4, 100)
	ids, err := kernels.ParseDevices("cpu:0-2")
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanDevices(ctx, cfg, ids, RunOptions{Shape: "qwen3-30m"})
	if err != nil {
		t.Fatal(err)
	}
	if p.EP != 1 || p.DP != 3 || !strings.HasPrefix(p.Why, "data parallel: the whole model fits each device") {
		t.Errorf("a dense model that fits: EP %d × DP %d, why %q", p.EP, p.DP, p.Why)
	}
	plan := p.Shares
	whole, err := Run(ctx, cfg, RunOptions{Shape: "qwen3-30m"})
	if err != nil {
		t.Fatal(err)
	}
	half := *cfg
	half.BatchSize = 8
	two, err := Run(ctx, &half, RunOptions{Shape: "qwen3-30m"})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 3 || plan[0].Examples != 2 || plan[1].Examples != 1 || plan[2].Examples != 1 {
		t.Fatalf("shares: %+v", plan)
	}
	for _, s := range plan {
		if s.PhaseBytes(PhaseResident) != whole.PhaseBytes(PhaseResident) {
			t.Errorf("%s: resident %d, one device's %d", s.Device, s.PhaseBytes(PhaseResident), whole.PhaseBytes(PhaseResident))
		}
	}
	if got, want := plan[0].PhaseBytes(PhaseSampling), two.PhaseBytes(PhaseSampling); got != want || got >= whole.PhaseBytes(PhaseSampling) {
		t.Errorf("cpu:0 samples 2 groups in %d bytes; a run of batch_size 8 takes %d, of 16 %d", got, want, whole.PhaseBytes(PhaseSampling))
	}
	if plan[1].PhaseBytes(PhaseSampling) >= plan[0].PhaseBytes(PhaseSampling) {
		t.Errorf("one group's sampling (%d) should be smaller than two's (%d)", plan[1].PhaseBytes(PhaseSampling), plan[0].PhaseBytes(PhaseSampling))
	}
	if err := Misfit(plan); err != nil {
		t.Errorf("64G host: %v", err)
	}
	// The three replicas together overflow a host that holds two of them.
	t.Setenv(FakeMemAvailableEnv, "1G")
	sp, err := PlanDevices(ctx, cfg, ids, RunOptions{Shape: "qwen3-30m"})
	if err != nil {
		t.Fatal(err)
	}
	small := sp.Shares
	sum := small[0].Peak + small[1].Peak + small[2].Peak
	if sum <= 1<<30 {
		t.Fatalf("the replicas' peaks sum to %d, under 1G: pick a smaller fake", sum)
	}
	if err := Misfit(small); err == nil || !strings.Contains(err.Error(), "3 cpu replicas need") {
		t.Errorf("1G host: %v", err)
	}
	// A GPU plan: cuda:1 with less free memory than its peak is named.
	gpu := []DeviceShare{plan[0], plan[1]}
	for i := range gpu {
		e := *gpu[i].Estimate
		free := e.Peak + 1
		if i == 1 {
			free = e.Peak - 1
		}
		e.Available = &Available{Bytes: free, Known: true}
		gpu[i] = DeviceShare{Device: kernels.DeviceID{Backend: "cuda", Index: i}, Examples: gpu[i].Examples, Estimate: &e}
	}
	if err := Misfit(gpu); err == nil || !strings.HasPrefix(err.Error(), "cuda:1 does not fit: it needs") || !strings.Contains(err.Error(), "its largest item is training activations") {
		t.Errorf("cuda:1 short by a byte: %v", err)
	}
	many, _ := kernels.ParseDevices("cpu:0-4")
	if _, err := PlanDevices(ctx, cfg, many, RunOptions{Shape: "qwen3-30m"}); err == nil || !strings.Contains(err.Error(), "5 devices but a step has 4 groups") {
		t.Errorf("5 devices, 4 groups: %v", err)
	}
}
