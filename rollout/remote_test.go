package rollout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/sampler"
)

// scriptGen answers each conversation with its message count and records
// the seeds it was sent; a conversation starting "down" fails, "fatal"
// fails fatally.
type scriptGen struct {
	mu    sync.Mutex
	seeds map[string][]uint64
}

func (g *scriptGen) Generate(_ context.Context, conv []chat.Message, p sampler.Params) (Generation, error) {
	first := conv[0].Content
	g.mu.Lock()
	g.seeds[first] = append(g.seeds[first], p.Seed)
	g.mu.Unlock()
	switch first {
	case "down":
		return Generation{}, errors.New("HTTP 503")
	case "fatal":
		return Generation{}, &FatalError{errors.New("HTTP 401: bad key")}
	}
	return Generation{Content: fmt.Sprint(len(conv)), FinishReason: "stop"}, nil
}

// TestRemoteEngineMultiTurn: episodes alternate generated turns and the
// environment's replies as messages, in Play's order, with Local's seeds
// for the first turn; a failing generation fails its episode only, a
// FatalError stops Play.
func TestRemoteEngineMultiTurn(t *testing.T) {
	g := &scriptGen{seeds: map[string][]uint64{}}
	exs := []env.Example{{ID: "a", Prompt: []chat.Message{{Role: "user", Content: "a"}}},
		{ID: "b", Prompt: []chat.Message{{Role: "user", Content: "down"}}}}
	trajs, err := RemoteEngine{Gen: g, Concurrency: 2}.Play(context.Background(), echoEnv{turns: 3}, exs, 2, sampler.DefaultParams(), 9, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(trajs) != 4 {
		t.Fatalf("%d trajectories", len(trajs))
	}
	a := trajs[0]
	var roles []string
	for _, m := range a.Messages {
		roles = append(roles, m.Role+":"+m.Content[:1])
	}
	if a.Turns != 3 || strings.Join(roles, " ") != "assistant:1 user:Y assistant:3 user:Y assistant:5" || a.Reward != 1 {
		t.Errorf("episode a: %d turns, %v, reward %v", a.Turns, roles, a.Reward)
	}
	if len(trajs[2].Errors) == 0 || !strings.Contains(trajs[2].Errors[0], "HTTP 503") || trajs[2].Reward != 0 {
		t.Errorf("episode b: %+v", trajs[2].Errors)
	}
	seeds := g.seeds["a"]
	if len(seeds) != 6 || !contains(seeds, sampler.DeriveSeed(9, 0, 0)) || !contains(seeds, sampler.DeriveSeed(9, 0, 1)) ||
		!contains(seeds, sampler.DeriveSeed(sampler.DeriveSeed(9, 0, 1), 2)) {
		t.Errorf("seeds of example a: %v", seeds)
	}
	exs[1].Prompt[0].Content = "fatal"
	if _, err := (RemoteEngine{Gen: g}).Play(context.Background(), echoEnv{turns: 3}, exs, 2, sampler.DefaultParams(), 9, Options{}); err == nil || !strings.Contains(err.Error(), "bad key") {
		t.Errorf("fatal generation error: %v", err)
	}
}

func contains(xs []uint64, x uint64) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
