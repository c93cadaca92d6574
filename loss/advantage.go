package loss

import (
	"fmt"
	"math"
)

// AdvantageScale says what Advantages divides r − mean(group) by.
type AdvantageScale uint8

const (
	ScaleGroup AdvantageScale = iota // per-group std (GRPO's default)
	ScaleBatch                       // std over the whole batch
	ScaleNone                        // no division (Dr. GRPO)
)

// AdvantageStats summarise one step's group-relative advantages.
type AdvantageStats struct {
	Mean, Std, Min, Max float64
	// FracZeroStd is the fraction of groups whose rewards are all equal:
	// they carry no learning signal.
	FracZeroStd float64
}

// Advantages computes group-relative advantages for consecutive groups of
// groupSize rewards: adv = r − mean(group), then divided by (std + 1e-4)
// where std is the unbiased standard deviation of the group (ScaleGroup)
// or of the whole batch (ScaleBatch); ScaleNone leaves r − mean. A group
// of one has std 0. A step's few hundred rewards are less work than one
// kernel launch, so this runs on the host, not on a Backend. A reward
// that is NaN or infinite is an error naming the rollout: it would
// otherwise poison every parameter through the update.
func Advantages(rewards []float32, groupSize int, scale AdvantageScale) ([]float32, AdvantageStats, error) {
	var st AdvantageStats
	if groupSize < 1 || len(rewards) == 0 || len(rewards)%groupSize != 0 {
		return nil, st, fmt.Errorf("%d rewards do not form groups of %d", len(rewards), groupSize)
	}
	for i, r := range rewards {
		if math.IsNaN(float64(r)) || math.IsInf(float64(r), 0) {
			return nil, st, fmt.Errorf("reward of rollout %d (example %d, rollout %d of its group) is %v; rewards must be finite numbers in [0, 1]", i, i/groupSize, i%groupSize, r)
		}
	}
	if scale > ScaleNone {
		return nil, st, fmt.Errorf("unknown advantage scale %d", scale)
	}
	n, groups := len(rewards), len(rewards)/groupSize
	adv := make([]float32, n)
	groupAdvantages(adv, rewards, groupSize, scale)
	st.Min, st.Max = math.Inf(1), math.Inf(-1)
	var sum, sq float64
	for _, a := range adv {
		sum += float64(a)
		sq += float64(a) * float64(a)
		st.Min, st.Max = math.Min(st.Min, float64(a)), math.Max(st.Max, float64(a))
	}
	st.Mean = sum / float64(n)
	st.Std = math.Sqrt(math.Max(sq/float64(n)-st.Mean*st.Mean, 0))
	zero := 0
	for g := range groups {
		grp := rewards[g*groupSize : (g+1)*groupSize]
		same := true
		for _, r := range grp {
			same = same && r == grp[0]
		}
		if same {
			zero++
		}
	}
	st.FracZeroStd = float64(zero) / float64(groups)
	return adv, st, nil
}

// groupAdvantages is Advantages' arithmetic (len(rewards) a multiple of
// groupSize, adv as long). Everything is float64, rounded once: k equal
// float32 rewards sum exactly, so a constant group's advantage is
// exactly 0.
func groupAdvantages(adv, rewards []float32, groupSize int, scale AdvantageScale) {
	batchStd := 0.0
	if scale == ScaleBatch {
		batchStd = unbiasedStd(rewards)
	}
	for g := range len(rewards) / groupSize {
		grp := rewards[g*groupSize : (g+1)*groupSize]
		mean := 0.0
		for _, r := range grp {
			mean += float64(r)
		}
		mean /= float64(groupSize)
		div := 1.0
		switch scale {
		case ScaleGroup:
			div = unbiasedStd(grp) + 1e-4
		case ScaleBatch:
			div = batchStd + 1e-4
		}
		for i, r := range grp {
			adv[g*groupSize+i] = float32((float64(r) - mean) / div)
		}
	}
}

// unbiasedStd is torch.std's default (n − 1 denominator); 0 for one value.
func unbiasedStd(xs []float32) float64 {
	if len(xs) < 2 {
		return 0
	}
	mean := 0.0
	for _, x := range xs {
		mean += float64(x)
	}
	mean /= float64(len(xs))
	ss := 0.0
	for _, x := range xs {
		ss += (float64(x) - mean) * (float64(x) - mean)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}
