package update

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/optim"
)

// newPolicy is a fresh LoRA adapter (the same one for the same seed) on
// base, with its AdamW optimizer.
func newPolicy(t *testing.T, base *model.Model) Policy {
	t.Helper()
	cfg := lora.DefaultConfig()
	cfg.Rank, cfg.Alpha = 4, 8
	ad, err := lora.New(base, cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ad.Free)
	oc := optim.DefaultConfig()
	oc.LR = 1e-2 // large enough that the second update sees moved weights
	opt, err := optim.NewAdamW(base.Backend, OptimizerParams(ad), oc)
	if err != nil {
		t.Fatal(err)
	}
	return Policy{Model: base.WithAdapter(ad), Adapter: ad, Optimizer: opt}
}

func tinyBase(t *testing.T) *model.Model {
	t.Helper()
	mc, err := model.LoadConfig(filepath.Join("..", "testdata", "models", "qwen3-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	return model.NewRandom(mc, cpu.New(), 1)
}

// scoredGroups are two groups of three rollouts with a mask, a
// truncation and a failed episode (nothing generated) among them.
func scoredGroups(vocab int) []Scored {
	rng := rand.New(rand.NewPCG(3, 3))
	tokens := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(rng.IntN(vocab))
		}
		return out
	}
	var out []Scored
	for g := range 2 {
		prompt := tokens(5 + g)
		for r := range 3 {
			s := loss.Sample{Prompt: prompt, Completion: tokens(4 + r)}
			for range s.Completion {
				s.OldLogp = append(s.OldLogp, -1-2*rng.Float32())
			}
			switch {
			case g == 0 && r == 1:
				s.ModelMask = []bool{true, true, false, true, true}
			case g == 1 && r == 0:
				s.Truncated = true
			case g == 1 && r == 2:
				s.Completion, s.OldLogp = nil, nil // a failed episode
			}
			out = append(out, Scored{Sample: s, Reward: rng.Float32()})
		}
	}
	return out
}

// handUpdate is the sequence the trainer wrote out before Step existed:
// advantages, the samples with something generated, the policy gradient,
// the optimizer step, and zeroed gradients when either fails.
func handUpdate(p Policy, rollouts []Scored, groupSize int, s Settings) (loss.AdvantageStats, loss.Stats, optim.StepStats, error) {
	rewards := make([]float32, len(rollouts))
	for i := range rollouts {
		rewards[i] = rollouts[i].Reward
	}
	scale, _ := s.Loss.AdvantageScale()
	adv, advStats, err := loss.Advantages(rewards, groupSize, scale)
	if err != nil {
		return advStats, loss.Stats{}, optim.StepStats{}, err
	}
	var samples []loss.Sample
	for i, r := range rollouts {
		if len(r.Sample.Prompt) == 0 || len(r.Sample.Completion) == 0 {
			continue
		}
		smp := r.Sample
		smp.Advantage = adv[i]
		samples = append(samples, smp)
	}
	ls, err := loss.PolicyGradient(p.Model, samples, s.Loss, s.MaxTokens, s.MicroBatchTokens)
	if err != nil {
		p.Adapter.ZeroGrad()
		return advStats, ls, optim.StepStats{}, err
	}
	upd, err := p.Optimizer.Update(s.MaxSteps)
	if err != nil {
		p.Adapter.ZeroGrad()
	}
	return advStats, ls, upd, err
}

// download reads every buffer of params back: values, then gradients.
func download(be kernels.Backend, params []optim.Param) (values, grads [][]float32) {
	for _, p := range params {
		v := make([]float32, p.Value.Len())
		be.Download(v, p.Value)
		values = append(values, v)
		if p.Grad != nil {
			g := make([]float32, p.Grad.Len())
			be.Download(g, p.Grad)
			grads = append(grads, g)
		}
	}
	be.Sync()
	return values, grads
}

func sameBits(a, b [][]float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
				return false
			}
		}
	}
	return true
}

func allZero(bufs [][]float32) bool {
	for _, b := range bufs {
		for _, x := range b {
			if x != 0 {
				return false
			}
		}
	}
	return true
}

// TestStepMatchesHandWrittenUpdate: two updates through Step leave the
// adapter and the optimizer's moments bit-identical to the sequence the
// trainer, the bench and the estimate each wrote out by hand, with the
// same statistics and the gradients zeroed.
func TestStepMatchesHandWrittenUpdate(t *testing.T) {
	base := tinyBase(t)
	got, want := newPolicy(t, base), newPolicy(t, base)
	rollouts := scoredGroups(base.Config.VocabSize)
	lc := loss.DefaultConfig()
	lc.Beta = 0.04 // the KL reference pass too
	s := Settings{Loss: lc, MaxTokens: 8, MicroBatchTokens: 24, MaxSteps: 10}
	for step := 1; step <= 2; step++ {
		st, err := Step(got, rollouts, 3, s)
		if err != nil {
			t.Fatal(err)
		}
		adv, ls, upd, err := handUpdate(want, rollouts, 3, s)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(st.Advantages, adv) || !reflect.DeepEqual(st.Loss, ls) || !reflect.DeepEqual(st.Optimizer, upd) {
			t.Errorf("step %d: stats %+v %+v %+v, by hand %+v %+v %+v", step, st.Advantages, st.Loss, st.Optimizer, adv, ls, upd)
		}
		if ls.Tokens == 0 || upd.GradNorm == 0 {
			t.Fatalf("step %d trained nothing: %+v %+v", step, ls, upd)
		}
		gv, gg := download(base.Backend, OptimizerParams(got.Adapter))
		wv, _ := download(base.Backend, OptimizerParams(want.Adapter))
		if !sameBits(gv, wv) {
			t.Errorf("step %d: adapter values differ from the hand-written update", step)
		}
		if !allZero(gg) {
			t.Errorf("step %d: gradients not zeroed", step)
		}
		gm, _ := download(base.Backend, got.Optimizer.State())
		wm, _ := download(base.Backend, want.Optimizer.State())
		if !sameBits(gm, wm) {
			t.Errorf("step %d: optimizer moments differ from the hand-written update", step)
		}
	}
}

// TestStepSamplesZeroesGradientsOnFailure: a failed policy gradient and a
// refused optimizer step (a NaN gradient) both leave the gradients at zero
// and the adapter as it was.
func TestStepSamplesZeroesGradientsOnFailure(t *testing.T) {
	base := tinyBase(t)
	p := newPolicy(t, base)
	var samples []loss.Sample
	for _, r := range scoredGroups(base.Config.VocabSize)[:3] {
		r.Sample.Advantage = 1
		samples = append(samples, r.Sample)
	}
	s := Settings{Loss: loss.DefaultConfig(), MaxTokens: 8, MicroBatchTokens: 64, MaxSteps: 10}
	before, _ := download(base.Backend, OptimizerParams(p.Adapter))

	// Gradients left behind by an earlier pass, then a sample the loss
	// rejects.
	if _, err := loss.PolicyGradient(p.Model, samples, s.Loss, s.MaxTokens, s.MicroBatchTokens); err != nil {
		t.Fatal(err)
	}
	bad := append([]loss.Sample{}, samples...)
	bad[1].OldLogp = bad[1].OldLogp[1:]
	if _, err := StepSamples(p, bad, s); err == nil || !strings.Contains(err.Error(), "policy loss:") {
		t.Fatalf("mismatched log-probs: %v", err)
	}
	if _, g := download(base.Backend, OptimizerParams(p.Adapter)); !allZero(g) {
		t.Error("gradients not zeroed after a failed policy gradient")
	}

	// A NaN already in a gradient: the policy gradient adds to it, the
	// optimizer refuses the step.
	g0 := p.Adapter.Params()[0].Grad
	base.Backend.Upload(g0, append([]float32{float32(math.NaN())}, make([]float32, g0.Len()-1)...))
	st, err := StepSamples(p, samples, s)
	if err == nil || !math.IsNaN(st.Optimizer.GradNorm) {
		t.Fatalf("NaN gradient: %v, grad norm %v", err, st.Optimizer.GradNorm)
	}
	after, g := download(base.Backend, OptimizerParams(p.Adapter))
	if !allZero(g) {
		t.Error("gradients not zeroed after a refused optimizer step")
	}
	if !sameBits(before, after) {
		t.Error("a failed update changed the adapter")
	}
}

// TestStepFiltersZeroAdvantageGroups: of four groups, the two whose
// rewards are all equal are left out before the forward. The update
// trains exactly the other two groups' tokens and leaves the adapter and
// the moments bit-identical to an unfiltered update of those two groups
// alone; without the filter (the KL term on, dapo's normaliser counting
// the constant groups' tokens) the same batch updates differently.
func TestStepFiltersZeroAdvantageGroups(t *testing.T) {
	base := tinyBase(t)
	half := scoredGroups(base.Config.VocabSize)
	all := append([]Scored{}, half[:3]...)
	for g, r := range []float32{1, 0} { // a constant group after each mixed one
		for _, s := range scoredGroups(base.Config.VocabSize)[3*g : 3*g+3] {
			s.Reward = r
			all = append(all, s)
		}
		if g == 0 {
			all = append(all, half[3:]...)
		}
	}
	lc := loss.DefaultConfig()
	lc.Beta = 0.04
	s := Settings{Loss: lc, MaxTokens: 8, MicroBatchTokens: 24, MaxSteps: 10}
	off := s
	off.Loss.FilterZeroAdvantages = false
	filtered, alone, unfiltered := newPolicy(t, base), newPolicy(t, base), newPolicy(t, base)
	got, err := Step(filtered, all, 3, s)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Step(alone, half, 3, off)
	if err != nil {
		t.Fatal(err)
	}
	if got.Loss.FilteredGroups != 2 || got.Loss.FilteredSamples != 6 || got.Loss.Tokens != want.Loss.Tokens || want.Loss.Tokens == 0 {
		t.Errorf("filtered %d groups (%d rollouts), trained %d tokens; want 2 (6) and the mixed groups' %d", got.Loss.FilteredGroups,
			got.Loss.FilteredSamples, got.Loss.Tokens, want.Loss.Tokens)
	}
	if got.Loss.Loss != want.Loss.Loss || got.Optimizer.GradNorm != want.Optimizer.GradNorm {
		t.Errorf("loss %v grad norm %v, want the mixed groups' %v %v", got.Loss.Loss, got.Optimizer.GradNorm, want.Loss.Loss, want.Optimizer.GradNorm)
	}
	fv, _ := download(base.Backend, OptimizerParams(filtered.Adapter))
	av, _ := download(base.Backend, OptimizerParams(alone.Adapter))
	fm, _ := download(base.Backend, filtered.Optimizer.State())
	am, _ := download(base.Backend, alone.Optimizer.State())
	if !sameBits(fv, av) || !sameBits(fm, am) {
		t.Error("the filtered batch's update differs from that of its mixed groups alone")
	}
	if _, err := Step(unfiltered, all, 3, off); err != nil {
		t.Fatal(err)
	}
	if uv, _ := download(base.Backend, OptimizerParams(unfiltered.Adapter)); sameBits(uv, av) {
		t.Error("the unfiltered batch updates as the mixed groups alone: the test cannot tell the filter is on")
	}
}

// TestFailedStepTakesNoUpdate (issue 27): a step in which every rollout
// failed — nothing generated, every group's rewards equal, or no group
// left to train on — applies no
// optimizer update after an earlier real one: AdamW's momentum would
// otherwise move the adapter on zero gradients. The adapter and moments
// stay bit-identical, the optimizer's step count does not advance, and
// Stats says the step was skipped, with the learning rate it would have
// used.
func TestFailedStepTakesNoUpdate(t *testing.T) {
	base := tinyBase(t)
	p := newPolicy(t, base)
	s := Settings{Loss: loss.DefaultConfig(), MaxTokens: 8, MicroBatchTokens: 24, MaxSteps: 10}
	if _, err := Step(p, scoredGroups(base.Config.VocabSize), 3, s); err != nil {
		t.Fatal(err)
	}
	failed := scoredGroups(base.Config.VocabSize)
	for i := range failed {
		failed[i].Sample.Completion, failed[i].Sample.OldLogp, failed[i].Reward = nil, nil, 0
	}
	equal := scoredGroups(base.Config.VocabSize)
	for i := range equal {
		equal[i].Reward = 0.5
	}
	// A step whose every group online difficulty filtering dropped has
	// no rollout to train on at all.
	for name, rollouts := range map[string][]Scored{"nothing generated": failed, "equal rewards": equal, "every group filtered": nil} {
		v0, _ := download(base.Backend, OptimizerParams(p.Adapter))
		m0, _ := download(base.Backend, p.Optimizer.State())
		step0 := p.Optimizer.Step
		st, err := Step(p, rollouts, 3, s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v1, g1 := download(base.Backend, OptimizerParams(p.Adapter))
		m1, _ := download(base.Backend, p.Optimizer.State())
		if !sameBits(v0, v1) || !sameBits(m0, m1) || p.Optimizer.Step != step0 {
			t.Errorf("%s: the adapter, its moments or the step count moved (step %d → %d)", name, step0, p.Optimizer.Step)
		}
		if !allZero(g1) {
			t.Errorf("%s: gradients left behind", name)
		}
		if !st.Skipped || st.Optimizer.LR == 0 {
			t.Errorf("%s: stats %+v: want Skipped and the learning rate it would have used", name, st)
		}
	}
}

// TestStepTrainsEveryRolloutSample: a rollout with other samples (an
// agent episode whose program rewrote its history) counts once in its
// group's advantages, and each of its samples trains with its advantage:
// the update is bit for bit that of the samples listed one by one with
// the advantages set by hand.
func TestStepTrainsEveryRolloutSample(t *testing.T) {
	base := tinyBase(t)
	rollouts := scoredGroups(base.Config.VocabSize)
	extra := scoredGroups(base.Config.VocabSize)
	rollouts[1].Others = []loss.Sample{extra[0].Sample, extra[2].Sample}
	rollouts[4].Others = []loss.Sample{extra[5].Sample} // nothing generated: no gradient
	s := Settings{Loss: loss.DefaultConfig(), MaxTokens: 8, MicroBatchTokens: 24, MaxSteps: 10}
	got, want := newPolicy(t, base), newPolicy(t, base)
	st, err := Step(got, rollouts, 3, s)
	if err != nil {
		t.Fatal(err)
	}
	rewards := make([]float32, len(rollouts))
	for i := range rollouts {
		rewards[i] = rollouts[i].Reward
	}
	scale, _ := s.Loss.AdvantageScale()
	adv, _, err := loss.Advantages(rewards, 3, scale)
	if err != nil {
		t.Fatal(err)
	}
	var samples []loss.Sample
	for i, r := range rollouts {
		for _, smp := range append([]loss.Sample{r.Sample}, r.Others...) {
			if len(smp.Completion) > 0 {
				smp.Advantage = adv[i]
				samples = append(samples, smp)
			}
		}
	}
	if len(samples) != 7 {
		t.Fatalf("%d samples to train by hand, want 7", len(samples))
	}
	ws, err := StepSamples(want, samples, s)
	if err != nil {
		t.Fatal(err)
	}
	if st.Loss.Tokens != ws.Loss.Tokens || st.Loss.Loss != ws.Loss.Loss {
		t.Errorf("trained %d tokens, loss %v; want %d, %v", st.Loss.Tokens, st.Loss.Loss, ws.Loss.Tokens, ws.Loss.Loss)
	}
	gv, _ := download(base.Backend, OptimizerParams(got.Adapter))
	wv, _ := download(base.Backend, OptimizerParams(want.Adapter))
	if !sameBits(gv, wv) {
		t.Error("the update differs from that of every sample listed with its rollout's advantage")
	}
}
