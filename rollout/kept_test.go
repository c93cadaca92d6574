package rollout

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

// TestKeptEngineMatchesLocalOnEmu plays six multi-turn calls through one
// KeptEngine and each through Local (a new sampler per call) on the
// emulated CUDA backend: a first call; the same call twice again (the
// live count passes through the same buckets), reusing the sampler; one whose longer prompt needs a longer max_len, so
// the engine builds a larger sampler; the first shapes again, reusing
// that larger sampler; and one on a bounded block pool (KVBlocks),
// reusing it again. Every trajectory's tokens, log-probs, turns and
// reward are Local's bit for bit; only the first and third calls build a
// sampler, and the second captures fewer decode graphs than Local, which
// captures every bucket afresh.
func TestKeptEngineMatchesLocalOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("plays 6 calls twice under the emulator")
	}
	tok := tinyChatMLTokenizer(t)
	be := emu.New()
	defer be.Close()
	cfg := &model.Config{ModelType: "qwen3", HiddenSize: 16, IntermediateSize: 32, NumLayers: 1, NumHeads: 2,
		NumKVHeads: 1, HeadDim: 8, VocabSize: tok.VocabSize(), RMSNormEps: 1e-6, RopeTheta: 10000, HiddenAct: "silu"}
	m := model.NewRandom(cfg, be, 3)
	defer m.Free()
	short := []env.Example{
		{ID: "a", Prompt: []chat.Message{{Role: "user", Content: "Say something."}}},
		{ID: "b", Prompt: []chat.Message{{Role: "user", Content: "Go."}}},
		{ID: "c", Prompt: []chat.Message{{Role: "user", Content: "More."}}},
	}
	long := []env.Example{{ID: "l", Prompt: []chat.Message{{Role: "user", Content: strings.Repeat("A longer prompt. ", 6)}}}}
	calls := []struct {
		exs    []env.Example
		seed   uint64
		opts   Options
		builds int // the engine's samplers after the call
	}{
		{short, 17, Options{}, 1},
		{short, 17, Options{}, 1},
		{short, 17, Options{}, 1},
		{long, 19, Options{}, 2},
		{short, 20, Options{}, 2},
		{short, 21, Options{KVBlocks: 8}, 2},
	}
	eng := NewKeptEngine(m, tok)
	defer eng.Close(context.Background())
	e := echoEnv{turns: 2}
	p := rolloutParams()
	p.MaxTokens = 12 // long enough turns for the live count to pass through several buckets
	for i, c := range calls {
		before := be.Counts()
		want, err := Local(context.Background(), m, tok, e, c.exs, 2, p, c.seed, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		localCaptures := be.Counts().Sub(before).Captures
		before = be.Counts()
		got, err := eng.Play(context.Background(), e, c.exs, 2, p, c.seed, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		captures := be.Counts().Sub(before).Captures
		t.Logf("call %d: %d captures kept, %d by Local; max_len %d", i, captures, localCaptures, eng.s.Config().MaxLen)
		for j := range want {
			g, w := got[j], want[j]
			if !slices.Equal(g.Tokens, w.Tokens) || !slices.Equal(g.Logprobs, w.Logprobs) || g.Turns != w.Turns || g.Reward != w.Reward {
				t.Fatalf("call %d trajectory %d: kept %d turns %v %v reward %v; Local %d turns %v %v reward %v", i, j, g.Turns, g.Tokens, g.Logprobs, g.Reward, w.Turns, w.Tokens, w.Logprobs, w.Reward)
			}
		}
		if eng.Builds() != c.builds || !eng.Kept() {
			t.Fatalf("call %d: %d samplers built (kept %v), want %d", i, eng.Builds(), eng.Kept(), c.builds)
		}
		if i == 2 && (localCaptures == 0 || captures != 0) {
			t.Errorf("call 2 repeats call 0: %d captures on the kept sampler, %d by Local; want 0 and some", captures, localCaptures)
		}
	}
	eng.Release()
	if eng.Kept() {
		t.Fatal("Release kept the sampler")
	}
}

// TestKeptEngineDropsAFailedPlaysSampler: after a Play that fails (an
// environment that is down: env.ErrFatal) the engine keeps no sampler —
// the state of a failed call's sampler is not trusted — and the next Play
// builds a new one and plays what Local plays.
func TestKeptEngineDropsAFailedPlaysSampler(t *testing.T) {
	tok := qwen3Tokenizer(t)
	m := vocabModel(t, tok)
	exs := []env.Example{
		{ID: "up", Prompt: []chat.Message{{Role: "user", Content: "Hi"}}},
		{ID: "down", Prompt: []chat.Message{{Role: "user", Content: "Hi"}}},
	}
	eng := NewKeptEngine(m, tok)
	defer eng.Close(context.Background())
	if _, err := eng.Play(context.Background(), downEnv{}, exs, 2, rolloutParams(), 1, Options{}); !errors.Is(err, env.ErrFatal) {
		t.Fatalf("Play on a down environment: %v, want its fatal error", err)
	}
	if eng.Kept() {
		t.Fatal("the engine kept the sampler of a failed Play")
	}
	got, err := eng.Play(context.Background(), echoEnv{turns: 3}, exs, 2, rolloutParams(), 17, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Local(context.Background(), m, tok, echoEnv{turns: 3}, exs, 2, rolloutParams(), 17, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !slices.Equal(got[i].Tokens, want[i].Tokens) || got[i].Turns != want[i].Turns {
			t.Errorf("trajectory %d after the failed Play: %d turns %v, Local %d turns %v", i, got[i].Turns, got[i].Tokens, want[i].Turns, want[i].Tokens)
		}
	}
	if eng.Builds() != 2 || !eng.Kept() {
		t.Errorf("%d samplers built (kept %v), want 2 (the failed Play's and a new one), kept", eng.Builds(), eng.Kept())
	}
}
