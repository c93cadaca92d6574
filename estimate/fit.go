package estimate

import (
	"context"
	"fmt"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/kernels"
)

// CheckRun is grpo train's guard: it estimates the run without a warm-up
// and refuses it when its peak exceeds the free memory (for several
// devices, DevicesFit's check of each device's share). Unknown free
// memory (the cuda backend cannot report it yet) lets the run start.
// override is the caller's way past the check ("pass --force"), named in
// the error.
func CheckRun(ctx context.Context, cfg *config.Config, override string) error {
	if ids, _ := cfg.DeviceList(); len(ids) > 1 {
		return DevicesFit(ctx, cfg, ids, override)
	}
	e, err := Run(ctx, cfg, RunOptions{})
	if err != nil {
		return fmt.Errorf("memory estimate: %w (%s to skip the check)", err, override)
	}
	if fits, ok := e.Fits(); ok && !fits {
		return fmt.Errorf("the run needs an estimated %s at peak (%s) but only %s is free (%s); %s (see 'grpo estimate CONFIG'), or %s to start anyway",
			FormatBytes(e.Peak), e.PeakPhase, FormatBytes(e.Available.Bytes), e.Available.Source, e.Advice(), override)
	}
	return nil
}

// DevicesFit is nil when a run over devices fits: each device's share
// planned (PlanDevices) and checked (Misfit), under the layout the
// trainer takes (trainer/replicas.ChooseLayout). override is named in the
// error as CheckRun's is.
func DevicesFit(ctx context.Context, cfg *config.Config, devices []kernels.DeviceID, override string) error {
	plan, err := PlanDevices(ctx, cfg, devices, RunOptions{})
	if err == nil {
		err = Misfit(plan.Shares)
	}
	if err != nil {
		return fmt.Errorf("memory estimate: %w (%s to skip the check)", err, override)
	}
	return nil
}
