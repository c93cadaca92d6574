package sampler

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// hideGraphs is a backend without kernels.Graphs: the sampler then decodes
// through Forward and Sample, the path the static one must reproduce.
type hideGraphs struct{ kernels.Backend }

// TestStaticDecodeMatchesForwardOnEmu generates three turns (the second
// after appended tokens, the third after a Reseed) for six sequences — four of them a group sharing
// its prompt's cache blocks — of different lengths,
// parameters and stop conditions on the emulated CUDA backend, once through
// the static decode path (graphs, padding rows, reloads as sequences
// finish) and once through Forward + Sample on the same device: every
// token and log-prob is the same, bit for bit.
func TestStaticDecodeMatchesForwardOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 2 × 6 sequences twice under the emulator")
	}
	be := emu.New()
	defer be.Close()
	cfg := &model.Config{ModelType: "qwen3", HiddenSize: 32, IntermediateSize: 48, NumLayers: 2, NumHeads: 4,
		NumKVHeads: 2, HeadDim: 16, VocabSize: 97, RMSNormEps: 1e-6, RopeTheta: 10000, HiddenAct: "silu"}
	params := make([]Params, 6)
	for i := range params {
		params[i] = sampling(uint64(40 + i))
		params[i].MaxTokens = 6 + 3*i
	}
	params[1].Temperature = 0 // greedy rows draw nothing from their stream
	params[3].TopK, params[3].TopP, params[3].MinP = 0, 1, 0
	run := func(b kernels.Backend) ([]Turn, int64) {
		m := model.NewRandom(cfg, b, 7)
		defer m.Free()
		s := newSampler(t, m, nil, Config{Slots: 8, MaxLen: 96})
		before := be.Counts()
		var seqs []*Seq
		ps := prompts(len(params))
		for i, p := range ps[:2] {
			q, err := s.Start(p, params[i])
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, q)
		}
		// A group sharing its prompt's blocks (forked, copy on write).
		g, err := s.StartGroup(append(ps[2], 5, 6, 7), params[2:])
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, g...)
		var turns []Turn
		for turn := range 3 {
			switch turn {
			case 1:
				for i, q := range seqs {
					if err := q.Append(int32(i), int32(2*i+1)); err != nil {
						t.Fatal(err)
					}
				}
			case 2:
				// Only the last token pending, the same set as the last
				// static step: the new streams must reach the device.
				for i, q := range seqs {
					q.Reseed(uint64(900 + i))
				}
			}
			if err := s.Run(context.Background(), seqs); err != nil {
				t.Fatal(err)
			}
			for _, q := range seqs {
				turns = append(turns, q.Turn)
			}
		}
		return turns, be.Counts().Sub(before).GraphLaunches
	}
	got, graphs := run(be)
	want, eagerGraphs := run(hideGraphs{be})
	t.Logf("%d graph launches; first turn of sequence 0: %v", graphs, got[0].Tokens)
	if graphs == 0 || eagerGraphs != 0 {
		t.Fatalf("graph launches: %d on the static path (want some), %d on the Forward path (want 0)", graphs, eagerGraphs)
	}
	for i := range want {
		if !slices.Equal(got[i].Tokens, want[i].Tokens) || !slices.Equal(got[i].Logprobs, want[i].Logprobs) || got[i].FinishReason != want[i].FinishReason {
			t.Fatalf("turn %d of sequence %d: static %v %v (%s), Forward path %v %v (%s)", i/len(params), i%len(params),
				got[i].Tokens, got[i].Logprobs, got[i].FinishReason, want[i].Tokens, want[i].Logprobs, want[i].FinishReason)
		}
	}
}

// TestStaticDecodeReseedOnEmu: a sequence reseeded between turns, with
// nothing appended, continues in the same static set as its last step;
// the device must take the new stream (the Forward path's tokens).
func TestStaticDecodeReseedOnEmu(t *testing.T) {
	be := emu.New()
	defer be.Close()
	cfg := &model.Config{ModelType: "qwen3", HiddenSize: 32, IntermediateSize: 48, NumLayers: 2, NumHeads: 4,
		NumKVHeads: 2, HeadDim: 16, VocabSize: 97, RMSNormEps: 1e-6, RopeTheta: 10000, HiddenAct: "silu"}
	p := DefaultParams()
	p.MaxTokens, p.Seed = 5, 3
	run := func(b kernels.Backend) [][]int32 {
		m := model.NewRandom(cfg, b, 7)
		defer m.Free()
		s := newSampler(t, m, nil, Config{Slots: 2, MaxLen: 64})
		q, err := s.Start(prompts(1)[0], p)
		if err != nil {
			t.Fatal(err)
		}
		var out [][]int32
		for turn := range 3 {
			if turn > 0 {
				q.Reseed(uint64(50 + turn))
			}
			if err := s.Run(context.Background(), []*Seq{q}); err != nil {
				t.Fatal(err)
			}
			out = append(out, q.Turn.Tokens)
		}
		return out
	}
	got, want := run(be), run(hideGraphs{be})
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("turn %d: static %v, Forward path %v", i, got[i], want[i])
		}
	}
}

// TestStaticDecodeMoEOnEmu: Qwen3-MoE (the tiny test model, every layer
// sparse) decodes through the static path whether it records routing
// (Config.RecordExperts) or not; either way every token and log-prob
// equals the Forward path's (hideGraphs), and the routing recorded through
// the graph equals the one Forward records, for every cached token of
// every sequence; with and without an adapter on the experts and routers
// (testdata/lora/theirs-moe).
func TestStaticDecodeMoEOnEmu(t *testing.T) {
	be := emu.New()
	defer be.Close()
	type result struct {
		turns   []Turn
		experts [][]int32
		cached  []int // tokens with keys and values in the cache, per sequence
		per     int   // record entries per token
		graphs  int64
	}
	run := func(b kernels.Backend, record, adapted bool) result {
		m, err := model.Load(filepath.Join("..", "testdata", "models", "qwen3-moe-tiny"), b)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Free()
		if m.Config.SparseLayers() == 0 {
			t.Fatal("qwen3-moe-tiny has no sparse layer")
		}
		if adapted {
			// PEFT's layout: q_proj, the experts' gate_proj and
			// down_proj (rank 2), the routers.
			ad, err := lora.Load(filepath.Join("..", "testdata", "lora", "theirs-moe"), m)
			if err != nil {
				t.Fatal(err)
			}
			defer ad.Free()
			m = m.WithAdapter(ad)
		}
		s := newSampler(t, m, nil, Config{Slots: 4, MaxLen: 48, RecordExperts: record})
		before := be.Counts()
		var seqs []*Seq
		for i, p := range prompts(3) {
			ps := sampling(uint64(70 + i))
			ps.MaxTokens = 5 + 2*i
			q, err := s.Start(p, ps)
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, q)
		}
		if err := s.Run(context.Background(), seqs); err != nil {
			t.Fatal(err)
		}
		var r result
		for _, q := range seqs {
			r.turns = append(r.turns, q.Turn)
			r.experts = append(r.experts, slices.Clone(q.Experts()))
			r.cached = append(r.cached, q.cached)
		}
		r.per = m.Config.RoutingLen(1)
		r.graphs = be.Counts().Sub(before).GraphLaunches
		return r
	}
	for _, adapted := range []bool{false, true} {
		want := run(hideGraphs{be}, true, adapted)
		for _, record := range []bool{false, true} {
			got := run(be, record, adapted)
			if got.graphs == 0 {
				t.Errorf("adapted %v, record %v: no graph launch: the decode steps took the Forward path", adapted, record)
			}
			for i := range want.turns {
				if !slices.Equal(got.turns[i].Tokens, want.turns[i].Tokens) || !slices.Equal(got.turns[i].Logprobs, want.turns[i].Logprobs) {
					t.Fatalf("adapted %v, record %v, sequence %d: %v %v, Forward path %v %v", adapted, record, i,
						got.turns[i].Tokens, got.turns[i].Logprobs, want.turns[i].Tokens, want.turns[i].Logprobs)
				}
				if record && !slices.Equal(got.experts[i], want.experts[i]) {
					t.Fatalf("adapted %v, sequence %d: recorded routing (%d entries) differs from the Forward path's (%d)\n%v\n%v",
						adapted, i, len(got.experts[i]), len(want.experts[i]), got.experts[i], want.experts[i])
				}
				if record && (want.per == 0 || len(want.experts[i]) != want.per*got.cached[i]) {
					t.Fatalf("adapted %v, sequence %d: %d recorded entries for %d cached tokens of %d each", adapted, i, len(want.experts[i]), got.cached[i], want.per)
				}
			}
		}
	}
}
