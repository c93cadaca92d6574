package sampler

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

// groupRun is what a group's sequences produced over two turns (a turn,
// an appended reply, a second turn), and the sampler's counts.
type groupRun struct {
	tokens [][]int32
	lps    [][]float32
	// full is each sequence's whole token list at the end and gen the
	// indices in it of the sampled tokens (lps[i][j] is the log-prob of
	// full[i][gen[i][j]]).
	full   [][]int32
	gen    [][]int
	stats  Stats
	copies int
	// window is the sliding-window pool's counts before the release
	// (model.KVCache.WindowPool), windowFree its free blocks after.
	window     model.WindowPoolStats
	windowFree int
}

// playGroups starts groups of g sequences on each prompt with StartGroup
// (sharing or not, per cfg), plays two turns with a reply appended in
// between, and releases everything, checking the pool is whole again.
func playGroups(t *testing.T, m *model.Model, cfg Config, prompts [][]int32, g int) groupRun {
	t.Helper()
	s := newSampler(t, m, nil, cfg)
	var seqs []*Seq
	for i, pr := range prompts {
		ps := make([]Params, g)
		for j := range ps {
			ps[j] = sampling(DeriveSeed(11, uint64(i), uint64(j)))
			ps[j].MaxTokens = 9
		}
		qs, err := s.StartGroup(pr, ps)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, qs...)
	}
	var r groupRun
	r.tokens, r.lps = make([][]int32, len(seqs)), make([][]float32, len(seqs))
	r.gen = make([][]int, len(seqs))
	for turn := range 2 {
		if err := s.Run(context.Background(), seqs); err != nil {
			t.Fatal(err)
		}
		for i, q := range seqs {
			for k := range q.Turn.Tokens {
				r.gen[i] = append(r.gen[i], q.Len()-len(q.Turn.Tokens)+k)
			}
			r.tokens[i] = append(r.tokens[i], q.Turn.Tokens...)
			r.lps[i] = append(r.lps[i], q.Turn.Logprobs...)
			if turn == 0 {
				if err := q.Append(int32(3+i%5), 42); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	r.stats, r.copies, r.window = s.Stats(), s.Cache().Copies, s.Cache().WindowPool()
	for _, q := range seqs {
		r.full = append(r.full, append([]int32(nil), q.Tokens()...))
	}
	for _, q := range seqs {
		s.Release(q)
	}
	if c := s.Cache(); c.FreeBlocks() != c.NumBlocks || s.reserved != 0 {
		t.Fatalf("after releasing everything %d of %d blocks are free and %d reserved", c.FreeBlocks(), c.NumBlocks, s.reserved)
	}
	r.windowFree = s.Cache().WindowPool().Free
	return r
}

// sharePrompts are two prompts whose lengths leave the last block partly
// filled (21 = 5·4 + 1) and exactly full (16 = 4·4) with blocks of 4.
func sharePrompts() [][]int32 {
	rng := rand.New(rand.NewPCG(4, 5))
	var out [][]int32
	for _, n := range []int{21, 16} {
		p := make([]int32, n)
		for j := range p {
			p[j] = int32(rng.IntN(97))
		}
		out = append(out, p)
	}
	return out
}

// TestSharedPromptMatchesOwnPrefill is the prefix-sharing bar on the CPU,
// for a transformer and a hybrid: groups of 4 sequences that share their
// prompt's cache blocks (and copy its recurrent states) sample the same
// tokens as sequences that each prefill the prompt (same seeds), with
// log-probs within 1e-5, through a second turn that continues in each
// sequence's own blocks; the prompt goes through Forward once per group
// instead of once per sequence.
func TestSharedPromptMatchesOwnPrefill(t *testing.T) {
	hybrid := func(t testing.TB) *model.Model {
		m, err := model.Load("../testdata/models/qwen3_5-tiny", cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	const g = 4
	for _, c := range []struct {
		name  string
		model func(testing.TB) *model.Model
	}{
		{"qwen3", tinyModel},
		// Three gated DeltaNet layers and one gated attention layer: the
		// followers take a copy of the prompt's linear-attention states
		// (and share its KV blocks), and a second turn continues each
		// sequence's own state.
		{"qwen3_5-hybrid", hybrid},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := c.model(t)
			prompts := sharePrompts()
			cfg := Config{Slots: 8, MaxLen: 48, BlockSize: 4}
			shared := playGroups(t, m, cfg, prompts, g)
			cfg.NoPrefixSharing = true
			own := playGroups(t, m, cfg, prompts, g)
			compareRuns(t, shared, own, 1e-5)
			if shared.stats.Forked != len(prompts)*(g-1) {
				t.Errorf("%d sequences forked a prompt, want %d", shared.stats.Forked, len(prompts)*(g-1))
			}
			promptTokens := 21 + 16
			if saved := own.stats.ForwardTokens - shared.stats.ForwardTokens; saved != (g-1)*(promptTokens-2) {
				t.Errorf("sharing saved %d forward tokens, want (g−1)·(prompt − 1) per prompt = %d", saved, (g-1)*(promptTokens-2))
			}
			// The 16-token prompt's forked positions 0..14 end in a partly
			// filled block that each of its 4 sequences writes position 15
			// into, so all but the last writer copy it; the 21-token
			// prompt's forked positions 0..19 fill whole blocks, and
			// position 20 starts a block of each sequence's own.
			if shared.copies != g-1 {
				t.Errorf("%d blocks copied on write, want %d", shared.copies, g-1)
			}
		})
	}
}

// TestSharedPromptEmuMatchesCPU runs the shared path on the emulated GPU,
// whose sampler cache is bf16 (Description.KVCache): keys and values are
// rounded to bf16 (relative error ≤ 2⁻⁹) before attention, so a token can
// differ from the CPU's where two candidates are nearly tied, and the
// comparison is teacher-forced: the log-prob the emu reports for each
// token it sampled is held to the CPU's f32 forward over the emu's own
// sequence (model.TokenLogprobs) within 2e-3 — the bf16 cache's effect on
// this 2-layer model's log-probs is 2.6e-4 at most here, an f32 cache's
// ~1e-6 (TestSharedPromptMatchesOwnPrefill), and a copy-on-write
// skipped shifts 37 of them past the bound, by up to 1.2e-2.
func TestSharedPromptEmuMatchesCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("emu: -short")
	}
	cpuModel := tinyModel(t)
	be := emu.New()
	t.Cleanup(func() { be.Close() })
	if be.Describe().KVCache != kernels.BF16 {
		t.Fatalf("emu's KV cache is %v, want bf16", be.Describe().KVCache)
	}
	emuModel := model.NewRandom(cpuModel.Config, kernels.Backend(be), 7)
	cfg := Config{Slots: 8, MaxLen: 48, BlockSize: 4}
	got := playGroups(t, emuModel, cfg, sharePrompts(), 4)
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
				t.Errorf("sequence %d token %d (%d): emu log-prob %v, cpu %v (|Δ| %.2g > 2e-3)", i, j, full[at], got.lps[i][j], want[at-1], d)
			}
		}
	}
	t.Logf("emu (bf16 cache) vs cpu (f32) log-probs, teacher-forced: max |Δ| = %.2g", worst)
	if got.stats.SharedPrefixRows == 0 {
		t.Error("no static decode step read a shared prompt once per group (Stats.SharedPrefixRows = 0)")
	}
	t.Logf("rows reading their prompt once per group, summed over static steps: %d", got.stats.SharedPrefixRows)
}

func compareRuns(t *testing.T, got, want groupRun, tol float64) {
	t.Helper()
	for i := range want.tokens {
		if !slices.Equal(got.tokens[i], want.tokens[i]) {
			t.Fatalf("sequence %d: tokens %v, want %v", i, got.tokens[i], want.tokens[i])
		}
		for j := range want.lps[i] {
			if d := math.Abs(float64(got.lps[i][j] - want.lps[i][j])); d > tol {
				t.Errorf("sequence %d token %d: log-prob %v, want %v (|Δ| %.2g > %g)", i, j, got.lps[i][j], want.lps[i][j], d, tol)
			}
		}
	}
}

// TestSharedPrefixAttentionMatchesPlain is the shared-prefix attention bar
// under emu: groups of 4 and of 8 sequences (StartGroup), decoded by the
// static step reading their prompt blocks once per group
// (kernels.AttentionSharedPrefix), sample the same tokens as the same
// groups decoded with each row reading its whole context
// (NoSharedPrefixAttention), with log-probs within 1e-3: the two sum the
// same f32 terms in a different order, and the bf16 cache can round a
// step's new K/V rows apart on that difference (2⁻⁹ relative; 7.3e-5 in
// model's TestStaticDecodeSharedPrompt), still inside the 2e-3 emu-vs-cpu
// bar; a pass that drops the prefix partials changes the tokens. Without the groups no step reads
// a prompt once per group, which the count of such rows shows.
func TestSharedPrefixAttentionMatchesPlain(t *testing.T) {
	if testing.Short() {
		t.Skip("emu: -short")
	}
	cpuModel := tinyModel(t)
	be := emu.New()
	t.Cleanup(func() { be.Close() })
	m := model.NewRandom(cpuModel.Config, kernels.Backend(be), 7)
	for _, g := range []int{4, 8} {
		cfg := Config{Slots: 2 * g, MaxLen: 48, BlockSize: 4}
		shared := playGroups(t, m, cfg, sharePrompts(), g)
		cfg.NoSharedPrefixAttention = true
		plain := playGroups(t, m, cfg, sharePrompts(), g)
		compareRuns(t, shared, plain, 1e-3)
		if plain.stats.SharedPrefixRows != 0 {
			t.Errorf("G=%d: %d rows read a shared prompt with NoSharedPrefixAttention", g, plain.stats.SharedPrefixRows)
		}
		// Every static step after the prefill has all 2·G rows in groups.
		if shared.stats.SharedPrefixRows < 2*g*8 {
			t.Errorf("G=%d: %d rows read their prompt once per group, want at least %d (2·G rows × 8 steps)", g, shared.stats.SharedPrefixRows, 2*g*8)
		}
		t.Logf("G=%d: %d rows read their prompt once per group", g, shared.stats.SharedPrefixRows)
	}
}
