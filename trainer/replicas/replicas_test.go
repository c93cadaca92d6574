package replicas

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/optim"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/update"
)

// openEmuSet loads the tiny Qwen3 on n emulated devices: device 0's
// replica as the trainer makes it, the others through Open.
func openEmuSet(t *testing.T, n int) *Set {
	t.Helper()
	dir := t.TempDir()
	if err := tinymodel.Write(dir, filepath.Join("..", "..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	var bes []kernels.Backend
	for range n {
		be := emu.New()
		t.Cleanup(func() { be.Close() })
		bes = append(bes, be)
	}
	l, err := loader.Open(context.Background(), loader.Spec{Model: dir, Backend: bes[0]})
	if err != nil {
		t.Fatal(err)
	}
	ad, err := lora.New(l.Base, lora.Config{Rank: 4, Alpha: 8, TargetModules: []string{"q_proj", "v_proj", "down_proj"}}, 7)
	if err != nil {
		t.Fatal(err)
	}
	ocfg := optim.DefaultConfig()
	ocfg.LR = 1e-2
	opt, err := optim.NewAdamW(bes[0], update.OptimizerParams(ad), ocfg)
	if err != nil {
		t.Fatal(err)
	}
	policy := l.Base.WithAdapter(ad)
	first := Replica{Backend: bes[0], Policy: update.Policy{Model: policy, Adapter: ad, Optimizer: opt}, Engine: rollout.LocalEngine{Model: policy, Tok: l.Tokenizer}}
	s, err := Open(context.Background(), Spec{Backends: bes[1:], First: first, Model: dir, Optimizer: ocfg, Tok: l.Tokenizer, PerCall: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// scored is groups groups of 4 rollouts of random tokens, rewards 0 or 1.
func scored(groups int, seed uint64) []update.Scored {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []update.Scored
	for g := range groups {
		prompt := make([]int32, 3+g)
		for i := range prompt {
			prompt[i] = int32(rng.IntN(200))
		}
		for j := range 4 {
			comp := make([]int32, 2+rng.IntN(4))
			old := make([]float32, len(comp))
			for i := range comp {
				comp[i] = int32(rng.IntN(200))
				old[i] = -5
			}
			out = append(out, update.Scored{Sample: loss.Sample{Prompt: prompt, Completion: comp, OldLogp: old}, Reward: float32(j % 2)})
		}
	}
	return out
}

// TestStepIssuesOneGradientAllReduce: a data-parallel step on two emu
// devices issues exactly one all-reduce (the flat gradient; the loss's
// counts are the host's, so no scalar reduction is needed in one
// process) and no other collective; a step with nothing to train issues
// none; the replicas stay bit-identical and apply one update each.
func TestStepIssuesOneGradientAllReduce(t *testing.T) {
	s := openEmuSet(t, 2)
	set := update.Settings{Loss: loss.DefaultConfig(), MaxTokens: 8, MicroBatchTokens: 16, MaxSteps: 10}
	for step := 1; step <= 2; step++ {
		st, err := s.Step(scored(3, uint64(step)), 4, set)
		if err != nil {
			t.Fatal(err)
		}
		if st.Skipped || !(st.Optimizer.GradNorm > 0) {
			t.Fatalf("step %d: skipped %v, grad norm %v", step, st.Skipped, st.Optimizer.GradNorm)
		}
		if got := s.Calls("all-reduce"); got != step {
			t.Errorf("after step %d: %d all-reduces, want %d (one per step)", step, got, step)
		}
		if err := s.CheckIdentical(); err != nil {
			t.Fatal(err)
		}
	}
	if b := s.Calls("barrier"); b != 0 {
		t.Errorf("%d barriers, want none", b)
	}
	equal := scored(2, 9)
	for i := range equal {
		equal[i].Reward = 1
	}
	set.Loss.FilterZeroAdvantages = true
	st, err := s.Step(equal, 4, set)
	if err != nil || !st.Skipped {
		t.Fatalf("a step of equal rewards: skipped %v, %v", st.Skipped, err)
	}
	if got := s.Calls("all-reduce"); got != 2 {
		t.Errorf("a skipped step made an all-reduce: %d in all", got)
	}
	for i := range s.Len() {
		if n := s.Replica(i).Policy.Optimizer.Step; n != 2 {
			t.Errorf("replica %d took %d optimizer steps, want 2", i, n)
		}
	}
}

// TestCheckIdenticalNamesTheReplica: one value of replica 1's adapter
// changed in its last bit fails the check, naming the device and the
// parameter.
func TestCheckIdenticalNamesTheReplica(t *testing.T) {
	s := openEmuSet(t, 2)
	if err := s.CheckIdentical(); err != nil {
		t.Fatalf("fresh copies: %v", err)
	}
	rep := s.Replica(1)
	p := rep.Policy.Adapter.Params()[3]
	v := make([]float32, p.Value.Len())
	rep.Backend.Download(v, p.Value)
	rep.Backend.Sync()
	v[5] = nextUp(v[5])
	rep.Backend.Upload(p.Value, v)
	err := s.CheckIdentical()
	if err == nil || !strings.Contains(err.Error(), "device 1") || !strings.Contains(err.Error(), p.Name) {
		t.Fatalf("a changed bit: %v", err)
	}
}

func nextUp(x float32) float32 {
	return x + max(1e-30, abs(x)*1.2e-7)
}

func abs(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// TestSplit: runs are consecutive and cut near the cost's even shares;
// groups go whole to the least loaded device, costliest first.
func TestSplit(t *testing.T) {
	for _, c := range []struct {
		costs []int
		parts int
		want  []int
	}{
		{[]int{1, 1, 1, 1}, 2, []int{0, 2, 4}},
		{[]int{10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 2, []int{0, 1, 11}},
		{[]int{3, 3, 3}, 4, []int{0, 1, 1, 2, 3}}, // 4.5 lies halfway: the earlier cut
		{[]int{5}, 3, []int{0, 0, 1, 1}},
		{nil, 2, []int{0, 0, 0}},
	} {
		if got := splitRuns(c.costs, c.parts); !slices.Equal(got, c.want) {
			t.Errorf("splitRuns(%v, %d) = %v, want %v", c.costs, c.parts, got, c.want)
		}
	}
	// Costs 7, 5, 4, 3, 1 on 2 devices: 7 → 0, 5 → 1, 4 → 1, 3 → 0, 1 → 1 (10 and 10).
	if got := splitGroups([]int{3, 7, 1, 5, 4}, 2); !slices.Equal(got, []int{0, 0, 1, 1, 1}) {
		t.Errorf("splitGroups = %v", got)
	}
}
