package estimate

import (
	"context"
	"fmt"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/kernels"
)

// DeviceShare is one device's part of a data-parallel run and its
// estimate, priced as a run of its own with that share of the batch.
type DeviceShare struct {
	Device kernels.DeviceID
	// Examples is how many of a step's groups (examples, each with its
	// rollouts_per_example rollouts) the device samples and trains.
	Examples int
	*Estimate
}

// PlanDevices estimates a data-parallel run on devices: every device holds
// the base weights, a copy of the adapter and its AdamW state, and samples
// and trains a share of each step's groups — whole groups, balanced by
// tokens, which for groups of the same expected length is by count (the
// first batch mod N devices take one more). Each share is priced by Run
// as a run with batch_size = its rollouts (the KV cache and the sampler
// shrink with it; the weights, the adapter, the optimizer state and one
// micro-batch's activations do not), against that device's free memory;
// o.Measure times the first device only. CPU replicas share the host's
// memory, so their fit is checked against the sum (Misfit).
func PlanDevices(ctx context.Context, cfg *config.Config, devices []kernels.DeviceID, o RunOptions) ([]DeviceShare, error) {
	groups := cfg.BatchSize / cfg.RolloutsPerExample
	if len(devices) > groups {
		return nil, fmt.Errorf("%d devices but a step has %d groups (batch_size %d / rollouts_per_example %d): a device would have nothing to train; raise batch_size or name fewer devices",
			len(devices), groups, cfg.BatchSize, cfg.RolloutsPerExample)
	}
	byShare := map[int]*Estimate{} // each distinct share is priced once
	var out []DeviceShare
	for i, d := range devices {
		n := groups / len(devices)
		if i < groups%len(devices) {
			n++
		}
		e, ok := byShare[n]
		if !ok {
			c := *cfg
			c.BatchSize = n * cfg.RolloutsPerExample
			c.Devices = nil
			opts := o
			opts.Device = d.Backend
			opts.Measure = o.Measure && i == 0
			var err error
			if e, err = Run(ctx, &c, opts); err != nil {
				return nil, fmt.Errorf("%s: %w", d, err)
			}
			byShare[n] = e
		}
		share := *e
		if d.Backend != "cpu" { // each GPU has its own memory
			av, err := AvailableMemory(d.String())
			if err != nil {
				return nil, err
			}
			share.Available = &av
		}
		share.Device = d.String()
		out = append(out, DeviceShare{Device: d, Examples: n, Estimate: &share})
	}
	return out, nil
}

// Misfit is nil when every device's peak fits its free memory (for CPU
// replicas: their peaks together fit the host's), else an error naming
// the first device that does not, its peak phase and the largest item
// there.
func Misfit(plan []DeviceShare) error {
	if len(plan) > 0 && plan[0].Device.Backend == "cpu" {
		var sum int64
		for _, s := range plan {
			sum += s.Peak
		}
		if av := plan[0].Available; av != nil && av.Known && sum > av.Bytes {
			return fmt.Errorf("%d cpu replicas need %s at peak together but the host has %s free (%s); each: %s",
				len(plan), FormatBytes(sum), FormatBytes(av.Bytes), av.Source, largestItem(plan[0].Estimate))
		}
		return nil
	}
	for _, s := range plan {
		if fits, ok := s.Fits(); ok && !fits {
			return fmt.Errorf("%s does not fit: it needs %s at peak (%s) but has %s free; its largest item is %s; %s",
				s.Device, FormatBytes(s.Peak), s.PeakPhase, FormatBytes(s.Available.Bytes), largestItem(s.Estimate), s.Advice())
		}
	}
	return nil
}

// largestItem names the biggest item held at the estimate's peak.
func largestItem(e *Estimate) string {
	var best MemItem
	for _, it := range e.Items {
		if (it.Phase == PhaseResident || it.Phase == e.PeakPhase) && it.Bytes > best.Bytes {
			best = it
		}
	}
	return fmt.Sprintf("%s %s (%s)", best.Phase, best.Name, FormatBytes(best.Bytes))
}

// Summary is the share in one line: its groups, its resident, sampling and
// training memory, its peak and the free memory it is checked against.
func (s DeviceShare) Summary() string {
	free := "free memory unknown"
	if s.Available != nil && s.Available.Known {
		free = FormatBytes(s.Available.Bytes) + " free"
	}
	return fmt.Sprintf("%s: %d groups; resident %s, sampling %s, training %s; peak %s (%s), %s",
		s.Device, s.Examples, FormatBytes(s.PhaseBytes(PhaseResident)), FormatBytes(s.PhaseBytes(PhaseSampling)),
		FormatBytes(s.PhaseBytes(PhaseTraining)), FormatBytes(s.Peak), s.PeakPhase, free)
}
