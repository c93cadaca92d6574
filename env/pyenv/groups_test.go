package pyenv

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rubric"
)

// playClosed plays an episode to its end as package rollout does, closing it.
func playClosed(t *testing.T, ep env.Episode, ex env.Example, turns ...string) rubric.Rollout {
	t.Helper()
	var completion []chat.Message
	for i, text := range turns {
		completion = append(completion, chat.Message{Role: "assistant", Content: text})
		reply, _, err := ep.Respond(context.Background(), text)
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		completion = append(completion, reply...)
	}
	ep.(io.Closer).Close()
	return rubric.Rollout{Prompt: ex.Prompt, Completion: completion, Answer: ex.Answer, Info: ex.Info}
}

// The episodes of one example started together are scored as one group
// by a rubric with group reward functions, whatever order their scores
// are asked in; a rollout scored without an episode is a group of one.
func TestPythonEnvGroupRewards(t *testing.T) {
	o := withStubVerifiers(t)
	o.Timeout = 20 * time.Second
	log := filepath.Join(t.TempDir(), "cleanup.log")
	e := newPython(t, "../pybridge/testdata/envs/legacy_env.py", map[string]any{"log": log}, o)
	exs, _ := e.Examples("train")
	eps := []env.Episode{e.NewEpisode(exs[0]), e.NewEpisode(exs[0]), e.NewEpisode(exs[0])}
	other := e.NewEpisode(exs[1]) // another example: another group
	ro := []rubric.Rollout{
		playClosed(t, eps[0], exs[0], "a", "yes"),
		playClosed(t, eps[1], exs[0], "b", "yes"),
		playClosed(t, eps[2], exs[0], "c", "no"),
		playClosed(t, other, exs[1], "d", "yes"),
	}
	// Scored concurrently, as rollout's scorer does: each waits for its group.
	res := e.Rubric().ScoreAll(context.Background(), ro, 4)
	want := []float64{1, 1, 0.5, 0.5} // correct + 0.5 × unique in its group
	for i, w := range want {
		if len(res[i].Errors) > 0 || res[i].Metrics["reward"] != w || res[i].Metrics["reward/cleaned"] != 1 {
			t.Errorf("rollout %d: %+v, want reward %v", i, res[i], w)
		}
	}
	alone := e.Rubric().Score(context.Background(), rubric.Rollout{Prompt: exs[0].Prompt, Answer: "yes",
		Completion: []chat.Message{{Role: "assistant", Content: "yes"}}})
	if alone.Metrics["reward"] != 1.5 {
		t.Errorf("unplayed rollout: %+v, want 1.5 (unique in a group of one)", alone)
	}
}

// A member that never ends (a caller that neither finishes nor closes
// it) holds its group up for the wait only: the others are then scored.
func TestPythonEnvGroupLateMember(t *testing.T) {
	o := withStubVerifiers(t)
	o.Timeout = 500 * time.Millisecond
	log := filepath.Join(t.TempDir(), "cleanup.log")
	e := newPython(t, "../pybridge/testdata/envs/legacy_env.py", map[string]any{"log": log}, o)
	exs, _ := e.Examples("train")
	a, late := e.NewEpisode(exs[0]), e.NewEpisode(exs[0])
	ro := playClosed(t, a, exs[0], "x", "yes")
	late.Respond(context.Background(), "x") // plays one turn, then is abandoned
	res := e.Rubric().Score(context.Background(), ro)
	if len(res.Errors) > 0 || res.Metrics["reward"] != 1.5 {
		t.Errorf("%+v, want 1.5: scored without the late member", res)
	}
}

// Members that neither finish nor are closed (a remote engine's max_turns
// cap) end when their scores are asked for: the group does not wait.
func TestPythonEnvGroupEndsAtScoring(t *testing.T) {
	o := withStubVerifiers(t)
	o.Timeout = 30 * time.Second
	log := filepath.Join(t.TempDir(), "cleanup.log")
	e := newPython(t, "../pybridge/testdata/envs/legacy_env.py", map[string]any{"log": log}, o)
	exs, _ := e.Examples("train")
	var ro []rubric.Rollout
	for _, text := range []string{"yes", "no"} {
		ep := e.NewEpisode(exs[0])
		reply, done, err := ep.Respond(context.Background(), text)
		if err != nil || done {
			t.Fatalf("%v, %v", done, err)
		}
		ro = append(ro, rubric.Rollout{Prompt: exs[0].Prompt, Answer: exs[0].Answer,
			Completion: append([]chat.Message{{Role: "assistant", Content: text}}, reply...)})
	}
	start := time.Now()
	res := e.Rubric().ScoreAll(context.Background(), ro, 2)
	if time.Since(start) > 10*time.Second {
		t.Errorf("scoring waited %v for members that were being scored", time.Since(start))
	}
	if res[0].Metrics["reward"] != 1.5 || res[1].Metrics["reward"] != 0.5 {
		t.Errorf("%+v", res)
	}
}
