package estimate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/rollout"
)

// TestEstimateCountsTurns: `grpo estimate` of an alphabet-sort config
// sizes each KV slot for the env's max_turns — prompt + turns × max_tokens
// + a reply budget between turns — so the sampling cache grows with the
// turns, and the item says so.
func TestEstimateCountsTurns(t *testing.T) {
	kv := func(turns int) (int64, string) {
		cfg := estimateConfig(16, 4, 100)
		cfg.Env = []config.Env{{ID: "alphabet-sort", Name: "alphabet-sort", Weight: 1, Args: map[string]any{"dataset_name": "synthetic", "min_turns": 1, "max_turns": turns}}}
		e, err := Run(context.Background(), cfg, RunOptions{Shape: "qwen3-30m"})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range e.Items {
			if it.Phase == PhaseSampling && strings.HasPrefix(it.Name, "KV cache") {
				return it.Bytes, it.Detail
			}
		}
		t.Fatalf("no sampling KV cache in %+v", e.Items)
		return 0, ""
	}
	mc, _ := model.Shape("qwen3-30m")
	perToken := 16 * mc.KVPositionBytes(kernels.F32) // 16 slots, one position each (f32 on the CPU)
	one, _ := kv(1)
	three, detail := kv(3)
	// No tokenizer with a named shape: the prompt is taken at 256 tokens.
	// Each slot's tokens take whole blocks of 16, with an int32 table entry
	// per block.
	pool := func(tokens int) int64 {
		blocks := int64((tokens + 15) / 16)
		return perToken*16*blocks + model.KVTableBytes(16*blocks)
	}
	if want := pool(AssumedPromptTokens + 100); one != want {
		t.Errorf("1 turn: KV cache %d bytes, want %d", one, want)
	}
	if want := pool(AssumedPromptTokens + 3*100 + 2*rollout.ReplyBudget); three != want {
		t.Errorf("3 turns: KV cache %d bytes, want %d", three, want)
	}
	if !strings.Contains(detail, "3 turns × max_tokens 100 + 2 replies") {
		t.Errorf("3 turns: detail %q does not show the turns", detail)
	}
}

// The step time of a multi-turn env counts every turn's decode steps and
// the replies prefilled and trained between turns.
func TestStepTimeExtrapolateTurns(t *testing.T) {
	st := &StepTime{PrefillPerToken: time.Microsecond, Decode1: 10 * time.Millisecond, DecodeN: 10 * time.Millisecond,
		DecodeBatch: 8, TrainPerToken: 100 * time.Microsecond, Steps: 1}
	st.extrapolate([]EnvShape{{Examples: 1, Rollouts: 2, PromptTokens: 50, MaxTurns: 3, MaxTokens: 100}})
	r := rollout.ReplyBudget
	// One prompt of 50 prefilled once, the second rollout's last prompt
	// token, and both rollouts' two replies.
	gen := time.Duration(50+1+2*2*r)*time.Microsecond + 300*10*time.Millisecond
	train := time.Duration(2*(50+300+2*r)) * 100 * time.Microsecond
	if st.Generate != gen || st.Train != train {
		t.Errorf("generate %v train %v; want %v %v", st.Generate, st.Train, gen, train)
	}
}
