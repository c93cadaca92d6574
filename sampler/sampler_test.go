package sampler

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// tinyModel is a random Qwen3-shaped model over a 97-token vocabulary: its
// logits are spread widely enough that sampling is genuinely random.
func tinyModel(t testing.TB) *model.Model {
	t.Helper()
	cfg := &model.Config{ModelType: "qwen3", HiddenSize: 32, IntermediateSize: 48, NumLayers: 2, NumHeads: 4,
		NumKVHeads: 2, HeadDim: 16, VocabSize: 97, RMSNormEps: 1e-6, RopeTheta: 10000, HiddenAct: "silu"}
	return model.NewRandom(cfg, cpu.New(), 7)
}

func newSampler(t testing.TB, m *model.Model, dec Decoder, cfg Config) *Sampler {
	t.Helper()
	s, err := New(m, dec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func prompts(n int) [][]int32 {
	rng := rand.New(rand.NewPCG(8, 9))
	out := make([][]int32, n)
	for i := range out {
		p := make([]int32, 1+rng.IntN(20))
		for j := range p {
			p[j] = int32(rng.IntN(97))
		}
		out[i] = p
	}
	return out
}

// stopIDs are frequent enough under the random model that some turns stop.
var stopIDs = []int32{7, 11}

func sampling(seed uint64) Params {
	p := DefaultParams()
	p.Temperature = 0.9
	p.TopP = 0.95
	p.TopK = 60
	p.MinP = 0.01
	p.MaxTokens = 30
	p.StopTokens = stopIDs
	p.Seed = seed
	return p
}

// TestBatchedEqualsAlone: six prompts of different lengths generated
// together (four slots, so slots are reused, and a 16-token prefill budget,
// so prompts are chunked and join a running batch) give each sequence the
// same tokens as generating it alone with the same seed.
func TestBatchedEqualsAlone(t *testing.T) {
	m := tinyModel(t)
	ps := prompts(6)
	params := make([]Params, len(ps))
	for i := range params {
		params[i] = sampling(DeriveSeed(42, uint64(i)))
	}
	s := newSampler(t, m, nil, Config{Slots: 4, MaxLen: 64, PrefillTokens: 16})
	batched, err := s.Generate(context.Background(), ps, params)
	if err != nil {
		t.Fatal(err)
	}
	stops, lengths := 0, 0
	for i := range ps {
		alone := newSampler(t, m, nil, Config{Slots: 1, MaxLen: 64})
		want, err := alone.Generate(context.Background(), ps[i:i+1], params[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		got := batched[i]
		if !equalIDs(got.Tokens, want[0].Tokens) || got.FinishReason != want[0].FinishReason {
			t.Errorf("prompt %d: batched %v (%s), alone %v (%s)", i, got.Tokens, got.FinishReason, want[0].Tokens, want[0].FinishReason)
			continue
		}
		for j := range got.Logprobs {
			if d := math.Abs(float64(got.Logprobs[j] - want[0].Logprobs[j])); d > 1e-5 {
				t.Errorf("prompt %d token %d: log-prob batched %v alone %v", i, j, got.Logprobs[j], want[0].Logprobs[j])
			}
		}
		switch got.FinishReason {
		case FinishStop:
			stops++
			if last := got.Tokens[len(got.Tokens)-1]; !got.StopToken || !slices.Contains(stopIDs, last) {
				t.Errorf("prompt %d: finish stop without the stop token kept last: %v", i, got.Tokens)
			}
		case FinishLength:
			lengths++
			if len(got.Tokens) != 30 {
				t.Errorf("prompt %d: finish length after %d tokens, want max_tokens 30", i, len(got.Tokens))
			}
		}
	}
	t.Logf("finish reasons: %d stop, %d length", stops, lengths)
}

func TestSameSeedSameOutputOtherSeedOther(t *testing.T) {
	m := tinyModel(t)
	s := newSampler(t, m, nil, Config{Slots: 2, MaxLen: 64})
	p := prompts(1)[0]
	gen := func(seed uint64) Turn {
		params := sampling(seed)
		params.StopTokens = nil
		out, err := s.Generate(context.Background(), [][]int32{p}, []Params{params})
		if err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	a, b, c := gen(1), gen(1), gen(2)
	if !equalIDs(a.Tokens, b.Tokens) {
		t.Errorf("same seed, different tokens:\n%v\n%v", a.Tokens, b.Tokens)
	}
	if equalIDs(a.Tokens, c.Tokens) {
		t.Errorf("seeds 1 and 2 gave the same 30 tokens: %v", a.Tokens)
	}
}

// TestGreedyIsArgmaxOfFullForward checks temperature 0 against the argmax
// of logits recomputed by one forward over the finished sequence, and the
// returned log-probs against model.TokenLogprobs.
func TestGreedyIsArgmaxOfFullForward(t *testing.T) {
	m := tinyModel(t)
	s := newSampler(t, m, nil, Config{Slots: 3, MaxLen: 64})
	ps := prompts(3)
	params := make([]Params, len(ps))
	for i := range params {
		params[i] = DefaultParams()
		params[i].Temperature = 0
		params[i].MaxTokens = 20
	}
	turns, err := s.Generate(context.Background(), ps, params)
	if err != nil {
		t.Fatal(err)
	}
	v := m.Config.VocabSize
	for i, tr := range turns {
		full := append(append([]int32(nil), ps[i]...), tr.Tokens...)
		var b model.Batch
		b.Add(0, 0, full...)
		logits, err := m.Logits(m.NewKVCache(1, len(full)), &b, nil)
		if err != nil {
			t.Fatal(err)
		}
		for j, tok := range tr.Tokens {
			row := logits[(len(ps[i])-1+j)*v : (len(ps[i])+j)*v]
			best := 0
			for k := range row {
				if row[k] > row[best] {
					best = k
				}
			}
			if int32(best) != tok {
				t.Errorf("prompt %d token %d: greedy chose %d, argmax of the full forward is %d", i, j, tok, best)
			}
		}
		checkLogprobs(t, m, full, len(ps[i]), tr.Logprobs)
	}
}

func checkLogprobs(t *testing.T, m *model.Model, full []int32, start int, got []float32) {
	t.Helper()
	want, err := m.TokenLogprobs(full, start)
	if err != nil {
		t.Fatal(err)
	}
	for j := range got {
		if d := math.Abs(float64(got[j] - want[j])); d > 1e-5 {
			t.Errorf("token %d: sampler log-prob %v, full forward %v", j, got[j], want[j])
		}
	}
}

// TestContinuationAfterAppend plays three turns in one slot, appending
// "environment" tokens between them, and checks every sampled token's
// log-prob against one forward over the whole sequence: the appended
// tokens were prefilled into the same cache slot at the right positions.
func TestContinuationAfterAppend(t *testing.T) {
	m := tinyModel(t)
	s := newSampler(t, m, nil, Config{Slots: 2, MaxLen: 80, PrefillTokens: 8})
	other, _ := s.Start([]int32{1, 2, 3}, sampling(99)) // shares the batch
	q, err := s.Start(prompts(1)[0], sampling(5))
	if err != nil {
		t.Fatal(err)
	}
	start := q.Len()
	type span struct{ at, n int }
	var model []span
	var lps []float32
	for turn := range 3 {
		if err := s.Run(context.Background(), []*Seq{q, other}); err != nil {
			t.Fatal(err)
		}
		model = append(model, span{q.Len() - len(q.Turn.Tokens), len(q.Turn.Tokens)})
		lps = append(lps, q.Turn.Logprobs...)
		if turn < 2 {
			if err := q.Append(50, 51, int32(52+turn)); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, err := m.TokenLogprobs(q.Tokens(), start)
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for _, sp := range model {
		for j := range sp.n {
			want := all[sp.at+j-start]
			if d := math.Abs(float64(lps[k] - want)); d > 1e-5 {
				t.Errorf("model token at %d: sampler log-prob %v, full forward %v", sp.at+j, lps[k], want)
			}
			k++
		}
	}
	if k == 0 {
		t.Fatal("no tokens generated")
	}
}

// letters decodes id i as the letter 'a'+i%26.
type letters struct{}

func (letters) Decode(ids []int32) string {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte('a' + id%26)
	}
	return string(b)
}

func TestStopStringEndsTurnAfterCompletingToken(t *testing.T) {
	m := tinyModel(t)
	s := newSampler(t, m, letters{}, Config{Slots: 8, MaxLen: 400})
	var ps [][]int32
	var params []Params
	for i := range 8 {
		ps = append(ps, []int32{int32(i + 1)})
		p := DefaultParams()
		p.Seed = uint64(i)
		p.Stop = []string{"ab", "zzz"}
		p.MaxTokens = 390
		params = append(params, p)
	}
	turns, err := s.Generate(context.Background(), ps, params)
	if err != nil {
		t.Fatal(err)
	}
	stopped := 0
	for i, tr := range turns {
		text := letters{}.Decode(tr.Tokens)
		if tr.FinishReason != FinishStop {
			if strings.Contains(text, "ab") || strings.Contains(text, "zzz") {
				t.Errorf("sequence %d: text holds a stop string but finished %q", i, tr.FinishReason)
			}
			continue
		}
		stopped++
		before := letters{}.Decode(tr.Tokens[:len(tr.Tokens)-1])
		if !strings.HasSuffix(text, tr.StopString) || strings.Contains(before, "ab") || strings.Contains(before, "zzz") {
			t.Errorf("sequence %d: stop string %q, text %q: must end right after the first stop string", i, tr.StopString, text)
		}
	}
	if stopped == 0 {
		t.Error("no sequence met a stop string in 390 tokens; the test proves nothing")
	}
}

func TestLengthLimits(t *testing.T) {
	m := tinyModel(t)
	s := newSampler(t, m, nil, Config{Slots: 1, MaxLen: 12})
	p := DefaultParams()
	p.MaxTokens = 3
	q, err := s.Start([]int32{1, 2, 3, 4, 5, 6, 7, 8}, p)
	if err != nil {
		t.Fatal(err)
	}
	run := func() Turn {
		if err := s.Run(context.Background(), []*Seq{q}); err != nil {
			t.Fatal(err)
		}
		return q.Turn
	}
	if tr := run(); len(tr.Tokens) != 3 || tr.FinishReason != FinishLength || tr.CacheFull {
		t.Errorf("per-turn cap: %d tokens, %q, cache full %v; want 3, length, false", len(tr.Tokens), tr.FinishReason, tr.CacheFull)
	}
	if tr := run(); len(tr.Tokens) != 1 || !tr.CacheFull || q.Len() != 12 {
		t.Errorf("total cap: %d tokens (sequence %d), cache full %v; want 1 (12), true", len(tr.Tokens), q.Len(), tr.CacheFull)
	}
	if tr := run(); len(tr.Tokens) != 0 || !tr.CacheFull || tr.FinishReason != FinishLength {
		t.Errorf("full slot: %d tokens, %q, cache full %v; want 0, length, true", len(tr.Tokens), tr.FinishReason, tr.CacheFull)
	}
	if err := q.Append(1); err == nil || !strings.Contains(err.Error(), "exceeds the cache length 12") {
		t.Errorf("append to a full slot: %v", err)
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	m := tinyModel(t)
	s := newSampler(t, m, nil, Config{Slots: 1, MaxLen: 64})
	q, _ := s.Start([]int32{1}, DefaultParams())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Run(ctx, []*Seq{q}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run on a cancelled context: %v, want context.Canceled", err)
	}
}

func TestBadInputErrors(t *testing.T) {
	m := tinyModel(t)
	for want, cfg := range map[string]Config{
		"slots = 0":          {Slots: 0, MaxLen: 8},
		"max_len = 1":        {Slots: 1, MaxLen: 1},
		"prefill_tokens = 2": {Slots: 4, MaxLen: 8, PrefillTokens: 2},
	} {
		if _, err := New(m, nil, cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%+v): %v, want %q", cfg, err, want)
		}
	}
	s := newSampler(t, m, nil, Config{Slots: 1, MaxLen: 8})
	stop := DefaultParams()
	stop.Stop = []string{"x"}
	badTemp := DefaultParams()
	badTemp.Temperature = -1
	for want, c := range map[string]struct {
		prompt []int32
		p      Params
	}{
		"empty prompt":         {nil, DefaultParams()},
		"leaves no room":       {make([]int32, 8), DefaultParams()},
		"outside the model's":  {[]int32{97}, DefaultParams()},
		"need a sampler built": {[]int32{1}, stop},
		"temperature = -1":     {[]int32{1}, badTemp},
	} {
		if _, err := s.Start(c.prompt, c.p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Start: %v, want %q", err, want)
		}
	}
	q, err := s.Start([]int32{1}, DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start([]int32{1}, DefaultParams()); err == nil || !strings.Contains(err.Error(), "all 1 cache slots") {
		t.Errorf("Start with no free slot: %v", err)
	}
	if err := s.Run(context.Background(), []*Seq{q, q}); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("Run with a duplicate: %v", err)
	}
	if err := q.Append(-1); err == nil || !strings.Contains(err.Error(), "outside the model's vocabulary") {
		t.Errorf("Append(-1): %v", err)
	}
	s.Release(q)
	if err := s.Run(context.Background(), []*Seq{q}); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("Run after Release: %v", err)
	}
	if s.FreeSlots() != 1 {
		t.Errorf("free slots after Release: %d, want 1", s.FreeSlots())
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
