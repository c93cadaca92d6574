package rollout

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/sampler"
)

// recordingEngine plays an example's rollouts as trajectories naming the
// example's place in the whole call (FirstExample + its index) and the
// rollout, and records how many examples it was given.
type recordingEngine struct {
	mu     sync.Mutex
	played []int
	fail   bool
}

func (r *recordingEngine) Play(_ context.Context, _ env.Environment, exs []env.Example, perExample int, _ sampler.Params, _ uint64, opts Options) ([]Trajectory, error) {
	r.mu.Lock()
	r.played = append(r.played, len(exs))
	r.mu.Unlock()
	if r.fail {
		return nil, errors.New("out of memory")
	}
	var out []Trajectory
	for i := range exs {
		for j := range perExample {
			out = append(out, Trajectory{Example: exs[i], Turns: (opts.FirstExample+i)*perExample + j})
		}
	}
	return out, nil
}

// TestSpread: 7 examples on 3 engines are played 2, 2 and 3 (whole
// examples, consecutive), each run at its place in the call, and the
// trajectories come back in the call's order; fewer examples than
// engines leave some idle; an engine's error names its device.
func TestSpread(t *testing.T) {
	engines := []*recordingEngine{{}, {}, {}}
	s := Spread{engines[0], engines[1], engines[2]}
	exs := make([]env.Example, 7)
	for i := range exs {
		exs[i].Answer = string(rune('a' + i))
	}
	trajs, err := s.Play(context.Background(), nil, exs, 2, sampler.Params{}, 1, Options{})
	if err != nil || len(trajs) != 14 {
		t.Fatalf("%d trajectories, %v", len(trajs), err)
	}
	for k, tr := range trajs {
		if tr.Turns != k || tr.Answer != exs[k/2].Answer {
			t.Errorf("trajectory %d: place %d, example %q", k, tr.Turns, tr.Answer)
		}
	}
	for d, want := range []int{2, 2, 3} {
		if got := engines[d].played; len(got) != 1 || got[0] != want {
			t.Errorf("engine %d played %v, want [%d]", d, got, want)
		}
	}
	if _, err := s.Play(context.Background(), nil, exs[:1], 2, sampler.Params{}, 1, Options{}); err != nil {
		t.Fatal(err)
	}
	if len(engines[0].played)+len(engines[1].played)+len(engines[2].played) != 4 {
		t.Errorf("one example played by more than one engine: %v %v %v", engines[0].played, engines[1].played, engines[2].played)
	}
	engines[1].fail = true
	if _, err := s.Play(context.Background(), nil, exs, 1, sampler.Params{}, 1, Options{}); err == nil || !strings.Contains(err.Error(), "device 1: out of memory") {
		t.Errorf("failing engine: %v", err)
	}
}
