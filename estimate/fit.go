package estimate

import (
	"context"
	"fmt"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/kernels"
)

// DevicesFit is nil when a data-parallel run over devices fits: each
// device's share planned (PlanDevices) and checked (Misfit), as grpo
// train checks a run before it starts; a plan that needs expert
// parallelism does not fit, since the trainer is data parallel only. An error ends with skip, the
// caller's way past the check.
func DevicesFit(ctx context.Context, cfg *config.Config, devices []kernels.DeviceID, skip string) error {
	plan, err := PlanDevices(ctx, cfg, devices, RunOptions{})
	if err == nil && plan.EP > 1 {
		err = fmt.Errorf("the model does not fit each device whole (%s), and expert-parallel training is not built yet", plan.Why)
	}
	if err == nil {
		err = Misfit(plan.Shares)
	}
	if err != nil {
		return fmt.Errorf("memory estimate: %w (%s)", err, skip)
	}
	return nil
}
