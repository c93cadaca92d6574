// Package replicas is the trainer's data parallelism: one replica per
// device of this process — and, under srun or torchrun, of every process
// of the job (world.go), all ranks of one collective — each holding the
// base weights, a copy of the adapter and its AdamW state. A step's groups are split across the
// devices (a whole group on one device); each device samples and trains
// its share; the adapters' gradients are summed with one all-reduce of a
// flat buffer; and every replica applies the same AdamW update to the same
// summed gradient, so the replicas stay bit-identical. Replica 0 is the
// run's own (the trainer checkpoints, evaluates and saves it); the others
// are copies of it made when the run starts, so a checkpoint holds one
// adapter and optimizer state whatever the device count, and a run resumes
// on another count.
package replicas

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/inproc"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/optim"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/tokenizer"
	"github.com/grpo-dev/grpo/update"
)

// Replica is one device's copy of what a step trains.
type Replica struct {
	Backend kernels.Backend
	// Policy is the base model on this device with this replica's
	// adapter attached, and the adapter's optimizer.
	Policy update.Policy
	// Engine plays this device's share of a step's rollouts.
	Engine rollout.Engine
	coll   kernels.Collective
	// Under expert parallelism with DP > 1: dp sums the experts'
	// gradients over the devices holding them (flatExperts, its
	// buffer), and others are every collective of the device's beyond
	// coll (its EP group's, dp), aborted and closed with it.
	dp          kernels.Collective
	others      []kernels.Collective
	flatExperts kernels.Buffer
	// flat is the adapter's gradients end to end, the one buffer the
	// all-reduce sums (gradients.go).
	flat kernels.Buffer
	// owned: the backend was opened here, and Close closes it.
	owned bool
	// local marks, under expert parallelism, the adapter's parameters
	// this rank alone holds (its experts'), by Params' order; nil
	// otherwise.
	local []bool
}

// Set is a run's replicas, device 0's first.
type Set struct {
	reps  []*Replica
	group *inproc.Group // the in-process collective of cpu and emu devices
	tok   *tokenizer.Tokenizer
	// enableThinking renders prompts as the run's rollouts do, to weigh
	// examples by their prompt tokens (split.go).
	enableThinking *bool
	// world is the job's processes when there are several: the devices
	// of all are the collective's ranks (world.go).
	world *World
	// ep: the replicas are expert-parallel ranks (expert_parallel.go),
	// each holding its share of the experts, all opened here unless
	// firstKept: rank 0 is the trainer's (ExpertSpec.First).
	ep, firstKept bool
	// epRanks is the size of an EP group: the first epRanks replicas
	// hold every expert once (SaveAdapter, SaveOptimizer).
	epRanks int
	// Check hashes every replica's adapter after each update and fails
	// the step when one differs from replica 0's: the replicas must stay
	// bit-identical. Off by default (a download of every adapter per
	// step); GRPO_CHECK_REPLICAS=1 turns it on.
	Check bool
}

// Spec is what Open needs to make the other devices' replicas.
type Spec struct {
	// Devices are the run's devices; Devices[0] is First's. Open opens
	// the others, unless Backends are given.
	Devices []kernels.DeviceID
	// Backends, when not empty, are the other replicas' backends, opened
	// by the caller (cpu or emu backends; emu is not a device a config
	// names) and not closed by Close.
	Backends []kernels.Backend
	// First is device 0's replica, loaded and (on resume) restored by the
	// trainer: the others copy its adapter values and optimizer state.
	First Replica
	// Model is the model the others load (loader.Spec.Model).
	Model string
	// Optimizer is the run's [optimizer].
	Optimizer optim.Config
	Tok       *tokenizer.Tokenizer
	// EnableThinking is [sampling] enable_thinking.
	EnableThinking *bool
	// PerCall plays every call on a new sampler (rollout.LocalEngine) as
	// the trainer's WithSamplerPerCall does, instead of keeping one.
	PerCall bool
	// Timeout bounds how long a device waits at a collective for the
	// others (0: 10 minutes).
	Timeout time.Duration
	// World, when the job has several processes (Meet), makes these
	// devices ranks of the job's collective; nil: this process alone.
	World *World
	Log   func(string)
	// Under expert parallelism (OpenRun): the adapter's configuration
	// and seed, and the checkpoint directory of the trainer's (adapter/,
	// optimizer.safetensors) a resumed run's ranks load their shares of
	// ("": a new run), as in ExpertSpec.
	LoRA       lora.Config
	Seed       uint64
	Checkpoint string
}

// OpenRun opens a run's set on its layout: One on one device, Open's
// data-parallel replicas, or under expert parallelism OpenExpertParallel
// with s.First as rank 0 (loaded with l.Expert(0)).
func OpenRun(ctx context.Context, l *Layout, s Spec) (*Set, error) {
	switch {
	case l.EP > 1:
		var adapter, state string
		if s.Checkpoint != "" {
			adapter, state = filepath.Join(s.Checkpoint, "adapter"), filepath.Join(s.Checkpoint, "optimizer.safetensors")
		}
		first := s.First
		return OpenExpertParallel(ctx, ExpertSpec{Layout: l, First: &first, Model: s.Model, LoRA: s.LoRA, Seed: s.Seed, Adapter: adapter, OptimizerState: state,
			Optimizer: s.Optimizer, Tok: s.Tok, EnableThinking: s.EnableThinking, PerCall: s.PerCall, Timeout: s.Timeout, Log: s.Log})
	case len(s.Devices) == 1 && len(s.Backends) == 0 && s.World == nil:
		return One(s.First), nil
	}
	set, err := Open(ctx, s)
	if err == nil {
		logf(s.Log, "data parallel over %s: a replica of the model, adapter and optimizer on each", set.Devices())
	}
	return set, err
}

// One is the set of a run on one device: its steps are update.Step's.
func One(first Replica) *Set { return &Set{reps: []*Replica{&first}} }

// Open makes a replica on each of s.Devices[1:] — a backend, the model
// loaded on it, the adapter and optimizer copied from s.First — and joins
// them in a collective.
func Open(ctx context.Context, s Spec) (_ *Set, err error) {
	if _, server := s.First.Engine.(*rollout.ServerEngine); server && s.World != nil {
		// Each rank would play the whole step on the server, and their
		// samples would differ: the ranks must share one step.
		return nil, fmt.Errorf("launched as %s with [inference]: a job of several processes plays its rollouts in process, across its devices; run one process, or drop [inference]", s.World.Rank)
	}
	set := &Set{reps: []*Replica{&s.First}, tok: s.Tok, enableThinking: s.EnableThinking, world: s.World, Check: os.Getenv("GRPO_CHECK_REPLICAS") == "1"}
	defer func() {
		if err != nil {
			set.Close(context.Background())
		}
	}()
	others := s.Backends
	if len(others) == 0 && len(s.Devices) > 1 {
		for _, id := range s.Devices[1:] {
			be, err := kernels.OpenDevice(id)
			if err != nil {
				return nil, fmt.Errorf("devices: %s: %w", id, err)
			}
			set.reps = append(set.reps, &Replica{Backend: be, owned: true})
			others = append(others, be)
		}
	} else {
		for _, be := range others {
			set.reps = append(set.reps, &Replica{Backend: be})
		}
	}
	if len(others) == 0 && s.World == nil {
		return set, nil
	}
	base0 := s.First.Policy.Model
	for i, rep := range set.reps[1:] {
		be, id := rep.Backend, fmt.Sprintf("device %d (%s)", i+1, rep.Backend.Name())
		l, err := loader.Open(ctx, loader.Spec{Model: s.Model, Backend: be, Log: s.Log})
		if err != nil {
			return nil, fmt.Errorf("devices: %s: %w", id, err)
		}
		l.Base.Recompute, l.Base.CheckpointLayers = base0.Recompute, base0.CheckpointLayers
		ad, err := copyAdapter(l.Base, s.First.Policy.Adapter, s.First.Backend)
		if err != nil {
			return nil, fmt.Errorf("devices: %s: %w", id, err)
		}
		opt, err := optim.NewAdamW(be, update.OptimizerParams(ad), s.Optimizer)
		if err != nil {
			return nil, err
		}
		if err := copyOptimizer(opt, s.First.Policy.Optimizer, s.First.Backend, be); err != nil {
			return nil, fmt.Errorf("devices: %s: %w", id, err)
		}
		rep.Policy = update.Policy{Model: l.Base.WithAdapter(ad), Adapter: ad, Optimizer: opt}
		if s.PerCall {
			rep.Engine = rollout.LocalEngine{Model: rep.Policy.Model, Tok: s.Tok}
		} else {
			rep.Engine = rollout.NewKeptEngine(rep.Policy.Model, s.Tok)
		}
	}
	return set, set.join(s.Timeout)
}

// join forms the replicas' collective: their backend's own group when it
// has one (cuda: an NCCL communicator per device, kernels.JoinGroup),
// else in process through host memory (kernels/inproc: cpu replicas and
// emu devices).
func (s *Set) join(timeout time.Duration) error {
	bes := make([]kernels.Backend, len(s.reps))
	for i, rep := range s.reps {
		bes[i] = rep.Backend
	}
	if s.world != nil {
		comms, err := s.world.join(bes)
		for i, rep := range s.reps {
			if err == nil {
				rep.coll = comms[i]
			}
		}
		return err
	}
	colls, g, err := joinCollectives(bes, timeout)
	if err != nil {
		return err
	}
	s.group = g
	for i, rep := range s.reps {
		rep.coll = colls[i]
	}
	return nil
}

// abort ends every collective of the replica's with err, so that the
// other devices' calls return instead of waiting for this one.
func (r *Replica) abort(err error) {
	for _, c := range append([]kernels.Collective{r.coll}, r.others...) {
		if c != nil {
			c.Abort(err)
		}
	}
}

// Len is the number of replicas.
func (s *Set) Len() int { return len(s.reps) }

// Devices says how many devices train: "2 devices", or across
// processes "8 devices across 2 processes".
func (s *Set) Devices() string {
	if s.world == nil {
		return fmt.Sprintf("%d devices", len(s.reps))
	}
	return fmt.Sprintf("%d devices across %d processes", len(s.reps)*s.world.Rank.WorldSize, s.world.Rank.WorldSize)
}

// Replica returns replica i (0: the run's own).
func (s *Set) Replica(i int) *Replica { return s.reps[i] }

// Calls is how many collective calls of op ("all-reduce", "barrier") the
// replicas have made together, for tests to count a step's reductions.
func (s *Set) Calls(op string) int {
	if s.group == nil {
		return 0
	}
	return s.group.Calls(op)
}

// Close closes every replica's engine and frees what Open made: the
// other replicas' devices. Replica 0's model, adapter and optimizer stay
// the trainer's.
func (s *Set) Close(ctx context.Context) error {
	var errs []error
	for i, rep := range s.reps {
		if c, ok := rep.Engine.(rollout.PolicyEngine); ok {
			errs = append(errs, c.Close(ctx))
		}
		if i == 0 && (!s.ep || s.firstKept) {
			if rep.flat != nil {
				rep.Backend.Free(rep.flat)
				rep.flat = nil
			}
			for _, c := range append([]kernels.Collective{rep.coll}, rep.others...) {
				if c != nil { // an NCCL communicator holds device memory
					errs = append(errs, c.Close())
				}
			}
			rep.coll, rep.others = nil, nil
			if rep.flatExperts != nil {
				rep.Backend.Free(rep.flatExperts)
				rep.flatExperts = nil
			}
			continue
		}
		if s.ep {
			// Every rank's model and adapter were made here.
			rep.freePolicy()
		}
		for _, c := range append([]kernels.Collective{rep.coll}, rep.others...) {
			if c != nil {
				errs = append(errs, c.Close())
			}
		}
		if c, ok := rep.Backend.(interface{ Close() error }); ok && rep.owned {
			errs = append(errs, c.Close())
		}
	}
	s.reps = s.reps[:1]
	s.world.Close(nil)
	return errors.Join(errs...)
}

// copyAdapter is a new adapter on base with from's configuration and
// from's values (on fromBe), parameter for parameter.
func copyAdapter(base *model.Model, from *lora.Adapter, fromBe kernels.Backend) (*lora.Adapter, error) {
	ad, err := lora.New(base, from.Config, 0)
	if err != nil {
		return nil, err
	}
	src, dst := from.Params(), ad.Params()
	if len(src) != len(dst) {
		ad.Free()
		return nil, fmt.Errorf("the adapter has %d parameters, its copy %d", len(src), len(dst))
	}
	for i := range src {
		if src[i].Name != dst[i].Name || src[i].Value.Len() != dst[i].Value.Len() {
			ad.Free()
			return nil, fmt.Errorf("adapter parameter %q (%d values) does not match the copy's %q (%d)", src[i].Name, src[i].Value.Len(), dst[i].Name, dst[i].Value.Len())
		}
		v := make([]float32, src[i].Value.Len())
		fromBe.Download(v, src[i].Value)
		if err := fromBe.Sync(); err != nil {
			return nil, err
		}
		base.Backend.Upload(dst[i].Value, v)
	}
	return ad, base.Backend.Sync()
}

// copyOptimizer gives to from's moments and step count.
func copyOptimizer(to, from *optim.AdamW, fromBe, toBe kernels.Backend) error {
	src, dst := from.State(), to.State()
	if len(src) != len(dst) {
		return fmt.Errorf("the optimizer holds %d moment buffers, the copy %d", len(src), len(dst))
	}
	for i := range src {
		if src[i].Name != dst[i].Name || src[i].Value.Len() != dst[i].Value.Len() {
			return fmt.Errorf("optimizer state %q (%d values) does not match the copy's %q (%d)", src[i].Name, src[i].Value.Len(), dst[i].Name, dst[i].Value.Len())
		}
		v := make([]float32, src[i].Value.Len())
		fromBe.Download(v, src[i].Value)
		if err := fromBe.Sync(); err != nil {
			return err
		}
		toBe.Upload(dst[i].Value, v)
	}
	to.Step = from.Step
	return toBe.Sync()
}
