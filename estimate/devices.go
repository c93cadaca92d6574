package estimate

import (
	"context"
	"fmt"
	"strings"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// DeviceShare is one device's part of a multi-device run and its
// estimate, priced as a run of its own with that share of the batch.
type DeviceShare struct {
	Device kernels.DeviceID
	// Examples is how many of a step's groups (examples, each with its
	// rollouts_per_example rollouts) the device samples and trains.
	Examples int
	// FirstExpert and Experts are the routed experts of every sparse
	// layer the device holds under expert parallelism (Experts 0: all).
	FirstExpert, Experts int
	*Estimate
}

// Plan is how a run spreads over its devices: EP devices split a
// mixture-of-experts model's routed experts (1: data parallel, every
// device holds the whole model) and DP = devices / EP copies of each
// expert; either way every device samples and trains its own share of a
// step's groups.
type Plan struct {
	EP, DP int
	Shares []DeviceShare
	// Why is the choice in one line, with the sizes that decided it.
	Why string
}

// PlanDevices plans a run on devices: data parallel when the whole model
// fits every device, else, for a mixture-of-experts model, the smallest
// expert-parallel degree EP (a divisor of the device count, at most the
// experts per layer) whose devices all fit; when none does, the largest,
// which Misfit then refuses. The config's expert_parallel, when set, is
// the degree (checked against the model's experts). grpo train takes the
// same plan (trainer/replicas), so the two never disagree. Each device's share is priced by Run as a
// run with batch_size = its rollouts and o.ExpertParallel = EP: the KV
// cache and the sampler shrink with the share, the weights (all, or the
// replicated part and 1/EP of the routed experts), the adapter and its
// optimizer state, and one micro-batch's activations (with the
// all-to-all buffers under EP) do not. Groups are whole and balanced by
// tokens, which for groups of the same expected length is by count (the
// first batch mod N devices take one more). Each is checked against that
// device's free memory; CPU replicas share the host's, so their fit is
// checked against the sum (Misfit). o.Measure times the first device of a
// data-parallel plan only (an expert-parallel step cannot run on one).
func PlanDevices(ctx context.Context, cfg *config.Config, devices []kernels.DeviceID, o RunOptions) (*Plan, error) {
	groups := cfg.BatchSize / cfg.RolloutsPerExample
	if len(devices) > groups {
		return nil, fmt.Errorf("%d devices but a step has %d groups (batch_size %d / rollouts_per_example %d): a device would have nothing to train; raise batch_size or name fewer devices",
			len(devices), groups, cfg.BatchSize, cfg.RolloutsPerExample)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	mc, _, _, err := estimateModel(ctx, cfg.Model, o)
	if err != nil {
		return nil, err
	}
	degrees := expertDegrees(mc, len(devices))
	if ep := cfg.ExpertParallel; ep > 0 {
		if err := checkExpertDegree(mc, ep); err != nil {
			return nil, err
		}
		degrees = []int{ep} // the config's, not the smallest that fits
	}
	measure := o.Measure
	o.Measure = false
	var tried []*Plan
	for _, ep := range degrees {
		shares, err := priceShares(ctx, cfg, devices, o, ep)
		if err != nil {
			return nil, err
		}
		p := &Plan{EP: ep, DP: len(devices) / ep, Shares: shares}
		tried = append(tried, p)
		if fits, known := p.fits(); fits || !known {
			break
		}
	}
	p := tried[len(tried)-1]
	p.Why = why(tried, mc)
	if measure && p.EP == 1 {
		o.Measure = true
		if p.Shares, err = priceShares(ctx, cfg, devices, o, 1); err != nil {
			return nil, err
		}
	} else if measure {
		p.Shares[0].note("step time not measured: an expert-parallel step cannot be warmed up on one device")
	}
	return p, nil
}

// expertDegrees are the expert-parallel degrees a run on n devices may
// use, smallest first: 1 (data parallel), and for a mixture-of-experts
// model every other divisor of n up to its experts per layer.
func expertDegrees(mc *model.Config, n int) []int {
	out := []int{1}
	if mc.SparseLayers() == 0 {
		return out
	}
	for ep := 2; ep <= n && ep <= mc.NumExperts; ep++ {
		if n%ep == 0 {
			out = append(out, ep)
		}
	}
	return out
}

// checkExpertDegree is what expert_parallel = ep needs of the model:
// routed experts, as many on each device (config.Validate checks the
// devices' side).
func checkExpertDegree(mc *model.Config, ep int) error {
	switch {
	case ep == 1:
		return nil
	case mc.SparseLayers() == 0:
		return fmt.Errorf("expert_parallel = %d: %s has no routed experts to split over devices; drop expert_parallel (several devices train it data parallel)", ep, mc.Arch().Name)
	case mc.NumExperts%ep != 0:
		return fmt.Errorf("expert_parallel = %d does not divide the model's %d experts per layer: set it to a divisor of %d that divides the devices, or 0 to take the plan", ep, mc.NumExperts, mc.NumExperts)
	}
	return nil
}

// priceShares estimates each device's share under expert-parallel degree
// ep: device i is rank i mod ep of its group, holding that rank's block
// of experts (blocks of as even a size as the count allows).
func priceShares(ctx context.Context, cfg *config.Config, devices []kernels.DeviceID, o RunOptions, ep int) ([]DeviceShare, error) {
	groups := cfg.BatchSize / cfg.RolloutsPerExample
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
			c.Devices, c.ExpertParallel = nil, 0 // one device's run, its degree opts'
			opts := o
			opts.Device = d.Backend
			opts.Measure = o.Measure && i == 0
			opts.ExpertParallel = ep
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
		ds := DeviceShare{Device: d, Examples: n, Estimate: &share}
		if share.ep.split() {
			// Rank k of the group holds experts [k·E/ep, (k+1)·E/ep): at
			// most share.ep.per, the count the estimate prices.
			k, total := i%ep, share.ep.total
			ds.FirstExpert = k * total / ep
			ds.Experts = (k+1)*total/ep - ds.FirstExpert
		}
		out = append(out, ds)
	}
	return out, nil
}

// Layout is the plan in one line, for a step of groups groups.
func (p *Plan) Layout(groups int) string {
	if p.EP == 1 {
		return fmt.Sprintf("data parallel over %d devices: each holds the base weights, the adapter and its AdamW state and trains its share of a step's %d groups",
			len(p.Shares), groups)
	}
	return fmt.Sprintf("expert parallel over %d devices, EP %d × DP %d: the routed experts, their adapters and AdamW state are split over groups of %d devices (each expert on %d); attention, dense layers, embeddings, the head and shared experts are on every device; each device trains its share of a step's %d groups",
		len(p.Shares), p.EP, p.DP, p.EP, p.DP, groups)
}

// fits reports whether every device fits (Misfit), and whether that
// could be checked: false when any device's free memory is unknown.
func (p *Plan) fits() (fits, known bool) {
	for _, s := range p.Shares {
		if s.Available == nil || !s.Available.Known {
			return false, false
		}
	}
	return Misfit(p.Shares) == nil, true
}

// worst is the share that decides a plan's fit: the first device that
// does not fit, else the one with the highest peak.
func (p *Plan) worst() DeviceShare {
	best := p.Shares[0]
	for _, s := range p.Shares {
		if fits, ok := s.Fits(); ok && !fits {
			return s
		}
		if s.Peak > best.Peak {
			best = s
		}
	}
	return best
}

// why says why the last of tried was chosen, naming each tried layout's
// peak on its deciding device against that device's free memory.
func why(tried []*Plan, mc *model.Config) string {
	p := tried[len(tried)-1]
	w := p.worst()
	free := "free memory unknown"
	if w.Available != nil && w.Available.Known {
		free = FormatBytes(w.Available.Bytes) + " free"
	} else if w.Available != nil && w.Available.Source != "" {
		free = w.Available.Source
	}
	if fits, known := p.fits(); !known {
		return fmt.Sprintf("data parallel, unchecked: %s needs %s at peak with the whole model (%s of weights); %s",
			w.Device, FormatBytes(w.Peak), FormatBytes(weightBytes(w.Estimate)), free)
	} else if len(tried) == 1 && fits {
		return fmt.Sprintf("data parallel: the whole model fits each device (%s at peak on %s, %s)", FormatBytes(w.Peak), w.Device, free)
	} else if len(tried) == 1 {
		return fmt.Sprintf("data parallel, and it does not fit: %s needs %s at peak of %s; %s has no routed experts to split over devices",
			w.Device, FormatBytes(w.Peak), free, mc.Arch().Name)
	}
	var steps []string
	for _, t := range tried {
		tw := t.worst()
		steps = append(steps, fmt.Sprintf("EP %d needs %s at peak on %s (%s of weights)", t.EP, FormatBytes(tw.Peak), tw.Device, FormatBytes(weightBytes(tw.Estimate))))
	}
	verdict := fmt.Sprintf("expert parallel, EP %d × DP %d", p.EP, p.DP)
	if fits, _ := p.fits(); !fits {
		verdict = fmt.Sprintf("no layout fits (EP %d × DP %d is the largest split)", p.EP, p.DP)
	}
	return fmt.Sprintf("%s: %s; each device has %s", verdict, strings.Join(steps, ", "), free)
}

// weightBytes is an estimate's base weights: the replicated ones and its
// routed experts.
func weightBytes(e *Estimate) int64 {
	var n int64
	for _, it := range e.Items {
		if it.Phase == PhaseResident && (it.Name == "base weights" || it.Name == "routed experts") {
			n += it.Bytes
		}
	}
	return n
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
	experts := ""
	if s.Experts > 0 {
		experts = fmt.Sprintf("; experts %d–%d", s.FirstExpert, s.FirstExpert+s.Experts-1)
	}
	return fmt.Sprintf("%s: %d groups%s; resident %s, sampling %s, training %s; peak %s (%s), %s",
		s.Device, s.Examples, experts, FormatBytes(s.PhaseBytes(PhaseResident)), FormatBytes(s.PhaseBytes(PhaseSampling)),
		FormatBytes(s.PhaseBytes(PhaseTraining)), FormatBytes(s.Peak), s.PeakPhase, free)
}
