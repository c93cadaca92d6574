package replicas

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/optim"
	"github.com/grpo-dev/grpo/update"
)

// Step is update.Step over the replicas. The advantages are the whole
// batch's (computed on the host, as on one device); the groups are
// spread over the devices by their tokens, now known (splitGroups); each
// device takes the policy gradient of its share with every token
// normalised by the whole batch's count (loss.PolicyGradientOfShare), so
// the shares' gradients sum to the whole batch's; one all-reduce sums
// them; and each replica takes the same AdamW step on the same sum — its
// gradient norm, hence the clipping, is the global one.
func (s *Set) Step(rollouts []update.Scored, groupSize int, st update.Settings) (update.Stats, error) {
	if len(s.reps) == 1 && s.world == nil {
		return update.Step(s.reps[0].Policy, rollouts, groupSize, st)
	}
	b, err := update.Prepare(rollouts, groupSize, st)
	if err != nil {
		return update.Stats{}, err
	}
	var out update.Stats
	b.Into(&out)
	whole := loss.CountBatch(b.Samples, st.Loss)
	shares := s.share(b)
	passes := 0 // data parallel: each device its own
	if s.ep {
		passes = s.mostPasses(shares, whole, st)
	}
	first, _ := s.world.first(len(s.reps))
	lossStats := make([]loss.Stats, len(s.reps))
	var jobStats []loss.Stats // every device's of the job, across processes
	t0 := time.Now()
	err = s.each(func(i int, rep *Replica) (err error) {
		lossStats[i], err = loss.PolicyGradientPadded(rep.Policy.Model, shares[first+i], whole, st.Loss, st.MaxTokens, st.MicroBatchTokens, passes)
		if err == nil && s.world != nil {
			// Every rank sums every device's stats, so all report the
			// whole batch's (and all skip a step none trains on).
			var all []loss.Stats
			if all, err = gatherLoss(rep.coll, rep.Backend, lossStats[i]); i == 0 {
				jobStats = all
			}
		}
		return err
	})
	out.PolicyGradientTime = time.Since(t0)
	if err != nil {
		s.zeroGrads()
		return out, fmt.Errorf("policy loss: %w", err)
	}
	if s.world != nil {
		lossStats = jobStats
	}
	combineLoss(&out.Loss, lossStats)
	opt0 := s.reps[0].Policy.Optimizer
	if out.Loss.Tokens == 0 {
		// Nothing to train on any device: a skipped step on all of them.
		out.Skipped = true
		out.Optimizer = optim.StepStats{LR: opt0.NextLR(st.MaxSteps)}
		s.zeroGrads()
		return out, nil
	}
	t0 = time.Now()
	steps := make([]optim.StepStats, len(s.reps))
	err = s.each(func(i int, rep *Replica) (err error) {
		if err := rep.allReduceGrads(); err != nil {
			return err
		}
		steps[i], err = rep.Policy.Optimizer.Update(st.MaxSteps)
		return err
	})
	out.Optimizer, out.OptimizerTime = steps[0], time.Since(t0)
	if err != nil {
		s.zeroGrads()
		return out, err
	}
	if s.Check {
		return out, s.CheckIdentical()
	}
	return out, nil
}

// share lists each device's samples — every device of the job's, across
// processes — whole groups, spread by their tokens, each device's in the
// batch's order (a group's rollouts stay together and share their prompt
// in the forward).
func (s *Set) share(b update.Batch) [][]loss.Sample {
	groups := 0
	if n := len(b.Group); n > 0 {
		groups = b.Group[n-1] + 1
	}
	costs := make([]int, groups)
	for i, g := range b.Group {
		costs[g] += b.Samples[i].SeqLen()
	}
	_, parts := s.world.first(len(s.reps))
	device := splitGroups(costs, parts)
	shares := make([][]loss.Sample, parts)
	for i, g := range b.Group {
		shares[device[g]] = append(shares[device[g]], b.Samples[i])
	}
	return shares
}

// each runs f on every replica at once, one goroutine per device, and
// joins their errors.
func (s *Set) each(f func(i int, rep *Replica) error) error {
	errs := make([]error, len(s.reps))
	var wg sync.WaitGroup
	for i, rep := range s.reps {
		wg.Go(func() {
			if err := recovered(func() error { return f(i, rep) }); err != nil {
				errs[i] = fmt.Errorf("device %d (%s): %w", i, rep.Backend.Name(), err)
				rep.abort(err) // the others' collective calls return instead of waiting
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// zeroGrads leaves no half-accumulated gradient on any replica after a
// failed update, as update.StepSamples does on one.
func (s *Set) zeroGrads() {
	for _, rep := range s.reps {
		rep.Policy.Adapter.ZeroGrad()
	}
}

// combineLoss gathers the devices' loss stats into the whole batch's:
// the loss terms were normalised by the whole batch, so they add; the
// averages over a share's trained tokens are weighed by them.
func combineLoss(out *loss.Stats, shares []loss.Stats) {
	filteredGroups, filteredSamples := out.FilteredGroups, out.FilteredSamples
	*out = loss.Stats{FilteredGroups: filteredGroups, FilteredSamples: filteredSamples}
	var mismatch float64
	for _, st := range shares {
		out.Loss += st.Loss
		out.AuxLoss += st.AuxLoss
		out.Tokens += st.Tokens
		out.RoutingReplayed += st.RoutingReplayed
		mismatch += st.RoutingMismatch * float64(st.RoutingReplayed)
		t := float64(st.Tokens)
		out.Entropy += st.Entropy * t
		out.KL += st.KL * t
		out.ClipLow += st.ClipLow * t
		out.ClipHigh += st.ClipHigh * t
		out.ClipRegion += st.ClipRegion * t
		out.MismatchKL += st.MismatchKL * t
		out.ISLow += st.ISLow * t
		out.ISHigh += st.ISHigh * t
	}
	if out.Tokens > 0 {
		t := float64(out.Tokens)
		out.Entropy, out.KL, out.ClipLow, out.ClipHigh, out.ClipRegion = out.Entropy/t, out.KL/t, out.ClipLow/t, out.ClipHigh/t, out.ClipRegion/t
		out.MismatchKL, out.ISLow, out.ISHigh = out.MismatchKL/t, out.ISLow/t, out.ISHigh/t
	}
	if out.RoutingReplayed > 0 {
		out.RoutingMismatch = mismatch / float64(out.RoutingReplayed)
	}
}

// recovered runs f, turning a panic into an error: a device's goroutine
// is not the step's, whose guard recovers the step's own panics.
func recovered(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return f()
}
