package sampler

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

// TestSlidingPoolGroupsMatchTeacherForcing plays groups of 4 on two
// prompts (21 and 16 tokens, blocks of 4) over the tiny model with a
// window of 5 in layer 0, in Forward calls of 8 positions: the sampler's
// cache keeps layer 0's blocks in a pool sized for the windows and one
// call (windowBlocks: 8 slots × 2 + 2 + 8 = 26 blocks, against the full
// pool's 96) and returns them as the windows pass, through chunked
// prefills, a shared prompt, copy on write, an appended reply and a
// second turn. The shared run samples the tokens of the one where
// each sequence prefills its prompt, and every log-prob equals the f32
// forward over the whole sequence in a contiguous cache (which frees
// nothing) within 1e-5.
func TestSlidingPoolGroupsMatchTeacherForcing(t *testing.T) {
	cfg := *tinyModel(t).Config
	cfg.SlidingWindows = []int{5, 0}
	m := model.NewRandom(&cfg, cpu.New(), 7)
	prompts := sharePrompts()
	sc := Config{Slots: 8, MaxLen: 48, BlockSize: 4, PrefillTokens: 8}
	shared := playGroups(t, m, sc, prompts, 4)
	sc.NoPrefixSharing = true
	own := playGroups(t, m, sc, prompts, 4)
	compareRuns(t, shared, own, 1e-5)
	var worst float64
	for i, full := range shared.full {
		want, err := m.TokenLogprobs(full, 1)
		if err != nil {
			t.Fatal(err)
		}
		for j, at := range shared.gen[i] {
			d := math.Abs(float64(shared.lps[i][j] - want[at-1]))
			worst = max(worst, d)
			if d > 1e-5 {
				t.Errorf("sequence %d token %d: log-prob %v, teacher-forced %v (|Δ| %.2g > 1e-5)", i, j, shared.lps[i][j], want[at-1], d)
			}
		}
	}
	t.Logf("sampler vs teacher-forced log-probs: max |Δ| = %.2g", worst)
	for _, r := range []groupRun{shared, own} {
		if r.window.Blocks != 26 || r.window.Dropped == 0 || r.windowFree != r.window.Blocks {
			t.Errorf("sliding pool: %+v, %d free after the release; want 26 blocks, some returned, all free at the end", r.window, r.windowFree)
		}
	}
	if shared.stats.Forked != 2*3 {
		t.Errorf("%d sequences forked a prompt, want 6", shared.stats.Forked)
	}
}

// TestSlidingPoolSized checks the sampler's sliding pool is the bound of
// model.Config.WindowPoolBlocks when that is below the full pool: 64
// slots of 1024 tokens in blocks of 16 with a window of 128 and prefill
// chunks of 256 take 64·(8+1) + 16 + 64 = 656 blocks, not 64·64 = 4096,
// and the sampler still runs a group through it.
func TestSlidingPoolSized(t *testing.T) {
	cfg := *tinyModel(t).Config
	cfg.SlidingWindows = []int{128, 0}
	m := model.NewRandom(&cfg, cpu.New(), 7)
	s := newSampler(t, m, nil, Config{Slots: 64, MaxLen: 1024, PrefillTokens: 256})
	if w := s.Cache().WindowPool(); w.Blocks != 656 {
		t.Fatalf("sliding pool of %d blocks, want 656", w.Blocks)
	}
	if s.Cache().NumBlocks != 64*64 {
		t.Fatalf("full pool of %d blocks, want %d", s.Cache().NumBlocks, 64*64)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	prompt := make([]int32, 300)
	for i := range prompt {
		prompt[i] = int32(rng.IntN(97))
	}
	ps := make([]Params, 4)
	for j := range ps {
		ps[j] = sampling(uint64(j))
		ps[j].MaxTokens = 200
	}
	qs, err := s.StartGroup(prompt, ps)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(t.Context(), qs); err != nil {
		t.Fatal(err)
	}
	w := s.Cache().WindowPool()
	if used := w.Blocks - w.Free; used > 4*9 || w.Dropped == 0 {
		t.Errorf("after 4 rollouts of up to 500 tokens: %d sliding blocks in use (want at most 4·9), %d returned", used, w.Dropped)
	}
	for _, q := range qs {
		s.Release(q)
	}
}

// TestSlidingPoolEmuMatchesCPU is TestSharedPromptEmuMatchesCPU with a
// window of 5 in layer 0: on the emulated GPU the static decode step
// reads the full layer's shared prompt blocks once per group
// (AttentionSharedPrefix) and the sliding layer's own table row by row,
// while blocks go back behind the windows; each sampled token's log-prob
// is the CPU's f32 forward over the emu's own sequence within the bf16
// cache's 2e-3.
func TestSlidingPoolEmuMatchesCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("emu: -short")
	}
	cfg := *tinyModel(t).Config
	cfg.SlidingWindows = []int{5, 0}
	cpuModel := model.NewRandom(&cfg, cpu.New(), 7)
	be := emu.New()
	t.Cleanup(func() { be.Close() })
	emuModel := model.NewRandom(&cfg, kernels.Backend(be), 7)
	got := playGroups(t, emuModel, Config{Slots: 8, MaxLen: 48, BlockSize: 4, PrefillTokens: 8}, sharePrompts(), 4)
	var worst float64
	for i, full := range got.full {
		want, err := cpuModel.TokenLogprobs(full, 1)
		if err != nil {
			t.Fatal(err)
		}
		for j, at := range got.gen[i] {
			d := math.Abs(float64(got.lps[i][j] - want[at-1]))
			worst = max(worst, d)
			if d > 2e-3 {
				t.Errorf("sequence %d token %d: emu log-prob %v, cpu %v (|Δ| %.2g > 2e-3)", i, j, got.lps[i][j], want[at-1], d)
			}
		}
	}
	t.Logf("emu (bf16 cache) vs cpu (f32) log-probs, teacher-forced: max |Δ| = %.2g", worst)
	if got.stats.SharedPrefixRows == 0 || got.window.Dropped == 0 || got.windowFree != got.window.Blocks {
		t.Errorf("shared-prefix rows %d, sliding pool %+v (%d free after the release): want shared rows, blocks returned, all free", got.stats.SharedPrefixRows, got.window, got.windowFree)
	}
}
