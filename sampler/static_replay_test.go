package sampler

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

// TestStaticRecordReplaysPlantedTie: routing recorded through the static
// decode path (graphs) is what training replays. As in model's
// TestRoutingReplayUsesRecordedExperts, experts 1 and 2 of every sparse
// layer of the tiny Qwen3-MoE get router rows ±1e-5 apart, so every
// token's pair nearly ties: the behaviour model (+) samples three
// sequences with RecordExperts under emu, the trained model (−) flips
// some decoded tokens' routes. Replaying the record, the trained model's
// training forward gives, at every row the static steps recorded, the
// behaviour model's log-probs (its own training forward) to 1e-3 (the
// routers' gap moves the logits by ~2e-4; a flipped route moves them by
// ~0.1, which the same forward without replay shows), and
// RoutingMismatch counts the flips. A record the graph wrote wrongly
// (another row's, another layer's, stale) would replay the wrong experts
// and fail the 1e-3.
func TestStaticRecordReplaysPlantedTie(t *testing.T) {
	be := emu.New()
	defer be.Close()
	const delta = 1e-5
	plant := func(sign float64) *model.Model {
		m, err := model.Load(filepath.Join("..", "testdata", "models", "qwen3-moe-tiny"), be)
		if err != nil {
			t.Fatal(err)
		}
		c := m.Config
		rng := rand.New(rand.NewPCG(21, 22))
		for l := range c.NumLayers {
			if !c.IsSparse(l) {
				continue
			}
			r := m.W.Layers[l].MoE.Router
			w := make([]float32, r.Len())
			be.Download(w, r)
			h := c.HiddenSize
			for i := range h {
				w[2*h+i] = w[1*h+i] + float32(sign*delta*rng.NormFloat64())
			}
			be.Upload(r, w)
		}
		return m
	}
	behaviour, trained := plant(+1), plant(-1)
	defer behaviour.Free()
	defer trained.Free()
	s := newSampler(t, behaviour, nil, Config{Slots: 4, MaxLen: 64, RecordExperts: true})
	before := be.Counts()
	ps := prompts(3)
	var seqs []*Seq
	for i, pr := range ps {
		p := DefaultParams()
		p.MaxTokens, p.Seed = 16, uint64(30+i)
		q, err := s.Start(pr, p)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, q)
	}
	if err := s.Run(context.Background(), seqs); err != nil {
		t.Fatal(err)
	}
	if g := be.Counts().Sub(before).GraphLaunches; g == 0 {
		t.Fatal("no graph launch: the decode steps took the Forward path, so nothing here comes from the static one")
	}
	per := behaviour.Config.RoutingLen(1)
	// logp scores every fed token's successor with m's training forward,
	// replaying experts when not nil.
	logp := func(m *model.Model, fed, targets, experts []int32) ([]float32, float64) {
		var b model.Batch
		b.Add(0, 0, fed...)
		b.Experts = experts
		tr, err := m.ForwardTrain(&b, nil, targets)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Free()
		lp := make([]float32, tr.Rows())
		be.Download(lp, tr.Logp)
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		return lp, tr.RoutingMismatch
	}
	var replayedDiff, freeDiff float64
	flipped, decoded := 0, 0
	for i, q := range seqs {
		toks := q.Tokens()
		fed, rec := toks[:len(toks)-1], q.Experts()
		if len(rec) != per*len(fed) {
			t.Fatalf("sequence %d: %d recorded entries for %d fed tokens of %d each", i, len(rec), len(fed), per)
		}
		// The trained model's own routing: the decoded tokens (positions
		// from the prompt's length on, fed by the static steps) whose
		// route it flips.
		var b model.Batch
		b.Add(0, 0, fed...)
		b.RecordExperts = make([]int32, len(rec))
		cache := trained.NewKVCache(1, len(fed))
		if _, err := trained.Logits(cache, &b, nil); err != nil {
			t.Fatal(err)
		}
		cache.Free()
		for pos := len(ps[i]); pos < len(fed); pos++ {
			decoded++
			if !slices.Equal(rec[pos*per:(pos+1)*per], b.RecordExperts[pos*per:(pos+1)*per]) {
				flipped++
			}
		}
		want, _ := logp(behaviour, fed, toks[1:], nil)
		replayed, mismatch := logp(trained, fed, toks[1:], rec)
		free, _ := logp(trained, fed, toks[1:], nil)
		if mismatch <= 0 || mismatch >= 1 {
			t.Errorf("sequence %d: RoutingMismatch %g, want the fraction of tokens recomputation flips, in (0, 1)", i, mismatch)
		}
		// Row pos scores the token after position pos: from the prompt's
		// length on, the rows whose routing the static steps recorded.
		for row := len(ps[i]); row < len(fed); row++ {
			replayedDiff = math.Max(replayedDiff, math.Abs(float64(replayed[row]-want[row])))
			freeDiff = math.Max(freeDiff, math.Abs(float64(free[row]-want[row])))
		}
	}
	t.Logf("%d of %d decoded tokens routed otherwise by the trained model; their successors' log-probs within %.2g of the behaviour model's with replay, %.2g without",
		flipped, decoded, replayedDiff, freeDiff)
	if flipped == 0 {
		t.Fatal("the planted near-tie flips no decoded token's routing: the test plants nothing")
	}
	if replayedDiff > 1e-3 {
		t.Errorf("replaying the static path's record, the decoded rows' log-probs differ from the behaviour model's by %.3g > 1e-3", replayedDiff)
	}
	if freeDiff < 3e-2 {
		t.Errorf("without replay the flipped routes move the decoded rows' log-probs by only %.3g: the plant is too weak to test replay", freeDiff)
	}
}
