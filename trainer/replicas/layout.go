package replicas

import (
	"context"
	"fmt"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/inproc"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/hub"
)

// Layout is how a run spreads over its devices, chosen before any
// weights load: data parallel (EP 1: each device loads the whole model,
// Open) or expert parallel, EP × DP (OpenExpertParallel): the devices
// form DP groups of EP consecutive devices, device i rank i mod EP of
// group i / EP (as estimate.PlanDevices prices them), each rank loading
// its share of the experts, so that each expert is on DP devices. Under
// expert parallelism the devices' backends are opened and joined in
// their collectives here, since the trainer loads device 0's share
// through its group's (Expert) before the other ranks open.
type Layout struct {
	// EP is the expert-parallel degree, 1 for data parallel; DP the
	// copies of each expert.
	EP, DP int
	// Why is the choice in one line, logged by the run.
	Why string
	// Under expert parallelism: every device's backend (device 0's
	// first), whether it was opened here, and its collectives: over
	// every device (colls: the replicated parameters' gradients), over
	// its EP group (experts: the sparse layers' exchanges), and over the
	// devices holding its experts (dps: their gradients; nil for DP 1,
	// where experts are colls).
	bes                 []kernels.Backend
	owned               []bool
	colls, experts, dps []kernels.Collective
	group               *inproc.Group
}

// LayoutSpec is what ChooseLayout needs.
type LayoutSpec struct {
	Config  *config.Config
	Devices []kernels.DeviceID
	// First is device 0's backend, opened by the trainer.
	First kernels.Backend
	// Backends, when not empty, are the other devices' backends, opened
	// by the caller (tests: cpu or emu), as in Spec.
	Backends []kernels.Backend
	Download func(hub.FileProgress)
	// World is the job's processes under srun/torchrun (nil: one), which
	// train data parallel only.
	World *World
	// Timeout bounds a collective's wait for a rank (0: 10 minutes).
	Timeout time.Duration
	Log     func(string)
}

// ChooseLayout is the run's layout over s.Devices: estimate's plan
// (estimate.PlanDevices, the one grpo estimate --devices prints, so the
// two never disagree) — data parallel when the whole model fits each
// device, else the smallest expert-parallel degree that fits — or the
// config's expert_parallel. A model without routed experts is data
// parallel unplanned (grpo train's guard, estimate.CheckRun, has priced
// it).
func ChooseLayout(ctx context.Context, s LayoutSpec) (_ *Layout, err error) {
	n, ep := len(s.Devices), s.Config.ExpertParallel
	if len(s.Backends) > 0 {
		n = 1 + len(s.Backends)
	}
	if n == 1 || ep == 1 || (s.World != nil && ep == 0) {
		return &Layout{EP: 1}, nil
	}
	if s.World != nil {
		return nil, fmt.Errorf("expert_parallel = %d, launched as %s: expert parallelism across processes is not built; run one process over the node's devices, or drop expert_parallel", ep, s.World.Rank)
	}
	dir, err := loader.Resolve(ctx, s.Config.Model, s.Download)
	if err != nil {
		return nil, err
	}
	mc, err := model.LoadConfig(dir)
	if err != nil {
		return nil, fmt.Errorf("model = %q: %w", s.Config.Model, err)
	}
	if ep == 0 && mc.SparseLayers() == 0 {
		return &Layout{EP: 1}, nil
	}
	l := &Layout{EP: ep, Why: fmt.Sprintf("expert_parallel = %d in the config", ep)}
	if ep == 0 || len(s.Backends) == 0 {
		// The plan prices the config's devices; backends a test opens
		// (emu, which no config names) take the config's degree.
		plan, err := estimate.PlanDevices(ctx, s.Config, s.Devices, estimate.RunOptions{})
		if err != nil {
			return nil, fmt.Errorf("devices: %w", err)
		}
		l.EP = plan.EP
		if ep == 0 {
			l.Why = plan.Why
		}
	}
	if l.EP == 1 {
		logf(s.Log, "layout: data parallel over %d devices (%s)", n, l.Why)
		return l, nil
	}
	l.DP = n / l.EP
	if n%l.EP != 0 || mc.NumExperts%l.EP != 0 {
		return nil, fmt.Errorf("expert parallel: EP %d does not divide the %d devices and the model's %d experts per layer; set expert_parallel to a divisor of both", l.EP, n, mc.NumExperts)
	}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if err := l.open(s, n); err != nil {
		return nil, err
	}
	logf(s.Log, "layout: expert parallel over %d devices, EP %d × DP %d: each device holds 1/%d of the routed experts with their adapters and AdamW state (each expert on %d), the rest of the model on every device (%s)", n, l.EP, l.DP, l.EP, l.DP, l.Why)
	return l, nil
}

// open opens the other devices' backends (unless given) and joins every
// rank in a collective: their backend's group when it has one (cuda:
// NCCL), else in process (cpu and emu).
func (l *Layout) open(s LayoutSpec, n int) error {
	l.bes, l.owned = []kernels.Backend{s.First}, []bool{false}
	if len(s.Backends) > 0 {
		l.bes = append(l.bes, s.Backends...)
		l.owned = append(l.owned, make([]bool, len(s.Backends))...)
	} else {
		for _, id := range s.Devices[1:n] {
			be, err := kernels.OpenDevice(id)
			if err != nil {
				return fmt.Errorf("devices: %s: %w", id, err)
			}
			l.bes, l.owned = append(l.bes, be), append(l.owned, true)
		}
	}
	return l.join(s.Timeout)
}

// join forms the layout's collectives over l.bes.
func (l *Layout) join(timeout time.Duration) (err error) {
	if l.colls, l.group, err = joinCollectives(l.bes, timeout); err != nil || l.DP == 1 {
		l.experts = l.colls
		return err
	}
	l.experts, l.dps = make([]kernels.Collective, len(l.bes)), make([]kernels.Collective, len(l.bes))
	for g := range l.DP { // the EP groups: consecutive devices
		colls, _, err := joinCollectives(l.bes[g*l.EP:(g+1)*l.EP], timeout)
		if err != nil {
			return err
		}
		copy(l.experts[g*l.EP:], colls)
	}
	for k := range l.EP { // rank k of every EP group: the copies of its experts
		var bes []kernels.Backend
		for g := range l.DP {
			bes = append(bes, l.bes[g*l.EP+k])
		}
		colls, _, err := joinCollectives(bes, timeout)
		if err != nil {
			return err
		}
		for g := range l.DP {
			l.dps[g*l.EP+k] = colls[g]
		}
	}
	return nil
}

// Expert is rank r's collective under expert parallelism (the loader's
// Spec.Experts), nil for data parallel.
func (l *Layout) Expert(r int) kernels.Collective {
	if l == nil || l.EP == 1 {
		return nil
	}
	return l.experts[r]
}

// Close frees what the layout opened and no set took: for a run that
// fails before its ranks open (once they have, the Set owns it all). A
// nil layout or a data-parallel one holds nothing.
func (l *Layout) Close() {
	if l != nil {
		l.close()
	}
}

func (l *Layout) close() {
	for i := range l.colls {
		for _, c := range l.collsOf(i) {
			c.Close()
		}
		l.colls[i] = nil
	}
	for i, be := range l.bes {
		if c, ok := be.(interface{ Close() error }); ok && l.owned[i] {
			c.Close()
		}
	}
	l.bes = nil
}

// collsOf lists device i's collectives not yet handed to a replica,
// each once.
func (l *Layout) collsOf(i int) []kernels.Collective {
	var out []kernels.Collective
	if l.colls[i] == nil {
		return nil
	}
	out = append(out, l.colls[i])
	if l.DP > 1 {
		out = append(out, l.experts[i], l.dps[i])
	}
	return out
}

// joinCollectives joins bes, one rank each, in their backend's group
// (kernels.JoinGroup) or else in process (kernels/inproc).
func joinCollectives(bes []kernels.Backend, timeout time.Duration) ([]kernels.Collective, *inproc.Group, error) {
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	if comms, ok, err := kernels.JoinGroup(bes, timeout); ok {
		if err != nil {
			return nil, nil, fmt.Errorf("devices: %w", err)
		}
		return comms, nil, nil
	}
	g, err := inproc.NewGroup(len(bes), timeout)
	if err != nil {
		return nil, nil, err
	}
	colls := make([]kernels.Collective, len(bes))
	for i, be := range bes {
		if colls[i], err = g.Join(i, be); err != nil {
			return nil, nil, err
		}
	}
	return colls, g, nil
}

func logf(log func(string), format string, args ...any) {
	if log != nil {
		log(fmt.Sprintf(format, args...))
	}
}
