package replicas

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/optim"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/tokenizer"
	"github.com/grpo-dev/grpo/update"
)

// Expert parallelism in one process (EP × DP): each rank of an EP group
// holds its share of every sparse layer's experts (model.LoadExperts),
// their adapters and so their optimizer state, and everything else whole.
// A step's groups are spread over the ranks as data parallelism spreads
// them; each rank trains its own, its sparse layers exchanging rows with
// the experts' ranks (model/moe_ep_exchange.go); the replicated
// adapters' gradients are summed with one all-reduce over every device,
// the experts' stay in their group (each rank's are already its group's
// whole share, every rank's tokens having passed through them) and with
// DP > 1 are summed over the groups' copies (gradients.go); a rank whose
// share takes
// fewer passes than another's pads with idle ones (loss.PolicyGradientPadded),
// since its experts serve the other ranks' passes; and the gradient norm is
// the global one (optim.AdamW.ShardAcross). The set's adapter and
// optimizer state save as one device's files, every expert's in the
// model's order (SaveAdapter, SaveOptimizer: the first group's), and a
// set opens from such
// files whatever wrote them (ExpertSpec.Adapter, OptimizerState), each
// rank taking its experts' values and moments. Given a tokenizer, each
// rank gets an engine and the set plays a call's examples as data
// parallelism does (engine.go), every rank at once, a rank with none
// included: the ranks' samplers run in step (sampler/lockstep.go,
// rollout/lockstep.go). A run opens its set from its Layout
// (ChooseLayout), with rank 0 the trainer's own (ExpertSpec.First).

// ExpertSpec is what OpenExpertParallel needs.
type ExpertSpec struct {
	// Backends are the ranks' backends, one each (cpu or emu), opened
	// and closed by the caller; or Layout's, when it is set (a run's:
	// the set then closes what the layout opened).
	Backends []kernels.Backend
	Layout   *Layout
	// First, when set, is rank 0: the caller's model loaded with
	// Layout.Expert(0), its adapter (new or restored), optimizer and
	// engine, which the set uses and does not free. Its model's
	// recompute policy is every rank's.
	First *Replica
	// Tok, when set, gives every rank an engine (a kept sampler, or with
	// PerCall one per call) and the set plays rollouts;
	// EnableThinking renders prompts as the run's rollouts do.
	Tok            *tokenizer.Tokenizer
	EnableThinking *bool
	PerCall        bool
	// Model is the model every rank loads (loader.Spec.Model).
	Model string
	// LoRA and Seed make each rank's adapter: lora.New keys every
	// matrix's initial values by its name, so the replicated parameters
	// start equal on every rank and each expert's as the whole model's
	// adapter would start it.
	LoRA lora.Config
	Seed uint64
	// Adapter and OptimizerState, when set, resume a run: Adapter a PEFT
	// adapter directory of the whole model (SaveAdapter's of any number of
	// ranks, or lora.Save's of one device) whose parameters each rank
	// loads its share of instead of making new ones (LoRA and Seed are
	// unused then), OptimizerState a file of every parameter's moments
	// (SaveOptimizer's, or optim's SaveState of one device) each rank
	// restores its own from. A checkpoint holds both (trainer).
	Adapter, OptimizerState string
	Optimizer               optim.Config
	// Timeout bounds how long a rank waits at a collective for the
	// others (0: 10 minutes).
	Timeout time.Duration
	Log     func(string)
}

// OpenExpertParallel loads the model on every rank, each rank's experts
// only (model.LoadExperts), and builds each rank's adapter and optimizer,
// new or restored (ExpertSpec.Adapter, OptimizerState).
func OpenExpertParallel(ctx context.Context, s ExpertSpec) (_ *Set, err error) {
	l := s.Layout
	if l == nil {
		if len(s.Backends) < 2 {
			return nil, fmt.Errorf("expert parallel: %d backends: want two ranks or more", len(s.Backends))
		}
		l = &Layout{EP: len(s.Backends), DP: 1, bes: s.Backends, owned: make([]bool, len(s.Backends))}
		if err := l.join(s.Timeout); err != nil {
			return nil, err
		}
	}
	set := &Set{group: l.group, ep: true, epRanks: l.EP, firstKept: s.First != nil, tok: s.Tok, enableThinking: s.EnableThinking, Check: os.Getenv("GRPO_CHECK_REPLICAS") == "1"}
	defer func() {
		if err != nil {
			set.Close(context.Background())
			l.close() // what the set did not take yet
		}
	}()
	for r, be := range l.bes {
		rep, err := openRank(ctx, s, l.experts[r], r, be)
		if err != nil {
			return nil, fmt.Errorf("expert parallel: device %d (%s), rank %d of its group: %w", r, be.Name(), r%l.EP, err)
		}
		rep.coll, rep.others = l.colls[r], l.collsOf(r)[1:]
		rep.owned, l.owned[r], l.colls[r] = l.owned[r], false, nil // the set's now
		if l.DP > 1 {
			rep.dp = l.dps[r]
		}
		set.reps = append(set.reps, rep)
	}
	return set, nil
}

// openRank makes device r's replica: the model with its experts only
// (its rank's of coll, its EP group's collective), the adapter of those,
// and an optimizer whose norm counts every rank's experts once; device 0
// is s.First when given.
func openRank(ctx context.Context, s ExpertSpec, coll kernels.Collective, r int, be kernels.Backend) (*Replica, error) {
	if r == 0 && s.First != nil {
		rep := *s.First
		rep.local = expertMarks(rep.Policy.Adapter)
		return &rep, rep.Policy.Optimizer.ShardAcross(coll, rep.local)
	}
	l, err := loader.Open(ctx, loader.Spec{Model: s.Model, Backend: be, Experts: coll, Adapter: s.Adapter, Log: s.Log})
	if err != nil {
		return nil, err
	}
	if s.First != nil {
		l.Base.Recompute, l.Base.CheckpointLayers = s.First.Policy.Model.Recompute, s.First.Policy.Model.CheckpointLayers
	}
	ad := l.Adapter // the rank's share of s.Adapter's
	if ad == nil {
		if ad, err = lora.New(l.Base, s.LoRA, s.Seed); err != nil {
			return nil, err
		}
	}
	opt, err := optim.NewAdamW(be, update.OptimizerParams(ad), s.Optimizer)
	if err != nil {
		return nil, err
	}
	local := expertMarks(ad)
	if err := opt.ShardAcross(coll, local); err != nil {
		return nil, err
	}
	if s.OptimizerState != "" {
		if err := opt.LoadState(s.OptimizerState); err != nil {
			return nil, err
		}
	}
	rep := &Replica{Backend: be, Policy: update.Policy{Model: l.Base.WithAdapter(ad), Adapter: ad, Optimizer: opt}, local: local}
	if s.Tok != nil && s.PerCall {
		rep.Engine = rollout.LocalEngine{Model: rep.Policy.Model, Tok: s.Tok}
	} else if s.Tok != nil {
		rep.Engine = rollout.NewKeptEngine(rep.Policy.Model, s.Tok)
	}
	return rep, nil
}

// expertMarks marks the adapter's parameters of routed experts, by
// Params' order: under expert parallelism each rank's own.
func expertMarks(ad *lora.Adapter) []bool {
	local := make([]bool, len(ad.Params()))
	for i, p := range ad.Params() {
		local[i] = p.Expert >= 0
	}
	return local
}

// mostPasses is the most forward and backward passes any rank's share
// takes: every rank runs as many (loss.PolicyGradientPadded), since each
// pass's sparse layers exchange rows among all the ranks.
func (s *Set) mostPasses(shares [][]loss.Sample, whole loss.Batch, st update.Settings) int {
	most := 0
	for i, rep := range s.reps {
		most = max(most, loss.Passes(rep.Policy.Model, shares[i], whole, st.Loss, st.MaxTokens, st.MicroBatchTokens))
	}
	return most
}

// replicated lists the adapter parameters every rank holds alike: all,
// or under expert parallelism all but the rank's experts'.
func (r *Replica) replicated() []lora.Param {
	params := r.Policy.Adapter.Params()
	if r.local == nil {
		return params
	}
	var out []lora.Param
	for i, p := range params {
		if !r.local[i] {
			out = append(out, p)
		}
	}
	return out
}

// freePolicy frees an expert-parallel rank's adapter, its flat gradient
// and its model's weights, all made by OpenExpertParallel.
func (r *Replica) freePolicy() {
	for _, b := range []*kernels.Buffer{&r.flat, &r.flatExperts} {
		if *b != nil {
			r.Backend.Free(*b)
			*b = nil
		}
	}
	if r.Policy.Adapter != nil {
		r.Policy.Adapter.Free()
	}
	if r.Policy.Model != nil {
		r.Policy.Model.Free()
	}
}

// SaveAdapter writes the set's adapter as one PEFT adapter directory:
// replica 0's, or under expert parallelism every rank's experts with the
// replicated parameters once (lora.SaveShards). baseModel is recorded as
// lora.Save records it.
func (s *Set) SaveAdapter(dir, baseModel string) error {
	if !s.ep {
		return lora.Save(dir, s.reps[0].Policy.Adapter, baseModel)
	}
	shards := make([]*lora.Adapter, s.epRanks) // the first EP group holds every expert once
	for i, rep := range s.reps[:s.epRanks] {
		shards[i] = rep.Policy.Adapter
	}
	return lora.SaveShards(dir, shards, baseModel)
}

// SaveOptimizer writes the set's optimizer state as optim's SaveState
// writes one optimizer's: replica 0's, or under expert parallelism every
// rank's experts' moments with the replicated parameters' once
// (optim.SaveShards). With SaveAdapter it is what a checkpoint holds,
// the same files as one device's, which resume on one device or on any
// number of ranks that splits the experts (ExpertSpec).
func (s *Set) SaveOptimizer(path string) error {
	if !s.ep {
		return s.reps[0].Policy.Optimizer.SaveState(path)
	}
	shards := make([]*optim.AdamW, s.epRanks)
	for i, rep := range s.reps[:s.epRanks] {
		shards[i] = rep.Policy.Optimizer
	}
	return optim.SaveShards(path, shards)
}
