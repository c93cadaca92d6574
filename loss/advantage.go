package loss

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// AdvantageStats summarise one step's group-relative advantages.
type AdvantageStats struct {
	Mean, Std, Min, Max float64
	// FracZeroStd is the fraction of groups whose rewards are all equal:
	// they carry no learning signal.
	FracZeroStd float64
}

// Advantages computes group-relative advantages for consecutive groups of
// groupSize rewards on the host (cpu.GroupAdvantages: the arithmetic of
// every backend's GroupAdvantages op, without a device round trip for a
// few hundred numbers). A reward that is NaN or infinite is an
// error naming the rollout: it would otherwise poison every parameter
// through the update.
func Advantages(rewards []float32, groupSize int, scale kernels.AdvantageScale) ([]float32, AdvantageStats, error) {
	var st AdvantageStats
	if groupSize < 1 || len(rewards) == 0 || len(rewards)%groupSize != 0 {
		return nil, st, fmt.Errorf("%d rewards do not form groups of %d", len(rewards), groupSize)
	}
	for i, r := range rewards {
		if math.IsNaN(float64(r)) || math.IsInf(float64(r), 0) {
			return nil, st, fmt.Errorf("reward of rollout %d (example %d, rollout %d of its group) is %v; rewards must be finite numbers in [0, 1]", i, i/groupSize, i%groupSize, r)
		}
	}
	if scale > kernels.ScaleNone {
		return nil, st, fmt.Errorf("unknown advantage scale %d", scale)
	}
	n, groups := len(rewards), len(rewards)/groupSize
	adv := make([]float32, n)
	cpu.GroupAdvantages(adv, rewards, groupSize, scale)
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
