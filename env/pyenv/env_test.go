package pyenv

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/pybridge"
	"github.com/grpo-dev/grpo/rubric"
)

const guessEnv = "../pybridge/testdata/envs/guess_number.py"

// withStubVerifiers puts the verifiers stand-in (and the test
// environments, as installed modules) on python3's path, and returns
// bridge settings that keep the child's stderr out of the test log.
func withStubVerifiers(t *testing.T) pybridge.Options {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on PATH: Python environments run in python")
	}
	stub, _ := filepath.Abs("../pybridge/testdata/vfstub")
	envs, _ := filepath.Abs("../pybridge/testdata/envs")
	t.Setenv("PYTHONPATH", stub+string(filepath.ListSeparator)+envs)
	t.Setenv("GRPO_PYTHON", "")
	t.Setenv("GRPO_HOME", t.TempDir())
	return pybridge.Options{Log: func(string) {}}
}

func newPython(t *testing.T, id string, args map[string]any, o pybridge.Options) *pythonEnv {
	t.Helper()
	e, err := env.New(id, args, env.WithPython(o))
	if err != nil {
		t.Fatal(err)
	}
	pe := e.(*pythonEnv)
	t.Cleanup(func() { pe.Close() })
	return pe
}

func TestPythonEnvByPath(t *testing.T) {
	o := withStubVerifiers(t)
	e := newPython(t, guessEnv, map[string]any{"max_turns": int64(3)}, o)
	if e.ID() != guessEnv || e.MaxTurns() != 3 {
		t.Errorf("id %q, max turns %d", e.ID(), e.MaxTurns())
	}
	train, err := e.Examples("train")
	if err != nil || len(train) != 3 || train[1].ID != "train-1" || train[1].Answer != "7" || train[1].Info["level"] != float64(1) {
		t.Fatalf("train = %+v, %v", train, err)
	}
	if eval, err := e.Examples("eval"); err != nil || len(eval) != 1 {
		t.Errorf("eval = %+v, %v", eval, err)
	}
	noEval := newPython(t, guessEnv, map[string]any{"with_eval": false}, o)
	if _, err := noEval.Examples("eval"); !errors.Is(err, env.ErrNoSplit) {
		t.Errorf("no eval_dataset: %v, want ErrNoSplit", err)
	}
}

// play runs one episode with scripted assistant turns and returns its
// rollout as package rollout would build it.
func playPython(t *testing.T, e env.Environment, ex env.Example, turns ...string) rubric.Rollout {
	t.Helper()
	ep := e.NewEpisode(ex)
	var completion []chat.Message
	for i, text := range turns {
		completion = append(completion, chat.Message{Role: "assistant", Content: text})
		reply, done, err := ep.Respond(context.Background(), text)
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		if done != (i == len(turns)-1) {
			t.Fatalf("turn %d: done = %v", i+1, done)
		}
		if !done {
			completion = append(completion, reply...)
		}
	}
	return rubric.Rollout{Prompt: ex.Prompt, Completion: completion, Answer: ex.Answer, Info: ex.Info}
}

// The rubric scores each rollout on its own episode's State: "guesses"
// counts what env_response saw, which a State rebuilt from the text
// alone would not know.
func TestPythonEnvEpisodesAndScores(t *testing.T) {
	o := withStubVerifiers(t)
	e := newPython(t, guessEnv, map[string]any{"max_turns": 3}, o)
	exs, _ := e.Examples("train")
	ro := []rubric.Rollout{
		playPython(t, e, exs[0], "2", "7"),
		playPython(t, e, exs[0], "2", "7"), // the same text: either State fits
		playPython(t, e, exs[0], "9", "8", "1"),
	}
	want := []struct{ reward, guesses float64 }{{1, 2}, {1, 2}, {0, 2}}
	for i, res := range e.Rubric().ScoreAll(context.Background(), ro, 3) {
		if len(res.Errors) > 0 || res.Reward != want[i].reward || res.Metrics["reward/correct"] != want[i].reward || res.Metrics["reward/guesses"] != want[i].guesses {
			t.Errorf("rollout %d: %+v, want reward %v and %v guesses", i, res, want[i].reward, want[i].guesses)
		}
	}
	// A rollout no episode played (as `grpo env score` gives) is scored
	// from its row: right answer, but no guesses in its fresh State.
	res := e.Rubric().Score(context.Background(), rubric.Rollout{Prompt: exs[0].Prompt, Answer: "7",
		Completion: []chat.Message{{Role: "assistant", Content: "7"}}})
	if res.Reward != 1 || res.Metrics["reward/guesses"] != 0 {
		t.Errorf("unplayed rollout: %+v", res)
	}
}

func TestPythonEnvByModule(t *testing.T) {
	o := withStubVerifiers(t)
	s, ok := env.Lookup("someone/guess-number")
	if !ok || !s.RawArgs || !strings.Contains(s.Description, "guess_number") {
		t.Fatalf("Lookup(someone/guess-number) = %+v, %v", s, ok)
	}
	e := newPython(t, "someone/guess-number", map[string]any{"secret": "3"}, o)
	exs, _ := e.Examples("train")
	if exs[0].Answer != "3" {
		t.Errorf("args did not reach load_environment: %+v", exs[0])
	}
	for _, id := range []string{"someone/not-installed", "random", "json"} {
		if _, ok := env.Lookup(id); ok {
			t.Errorf("Lookup(%q) found an environment", id)
		}
	}
	if _, err := env.New("someone/not-installed", nil, env.WithPython(o)); err == nil || !strings.Contains(err.Error(), "grpo env install owner/name") {
		t.Errorf("unknown id: %v", err)
	}
}

func TestPythonEnvDown(t *testing.T) {
	o := withStubVerifiers(t)
	o.MaxCrashes = 1
	e := newPython(t, "../pybridge/testdata/envs/trouble.py", nil, o)
	exs, _ := e.Examples("train")
	_, _, err := e.NewEpisode(exs[0]).Respond(context.Background(), "crash")
	if err == nil || !strings.Contains(err.Error(), "ZeroDivisionError: the env fell over") {
		t.Fatalf("crash: %v", err)
	}
	_, _, err = e.NewEpisode(exs[0]).Respond(context.Background(), "hi")
	if !errors.Is(err, env.ErrFatal) || !errors.Is(err, pybridge.ErrGaveUp) {
		t.Errorf("after the crash budget: %v, want ErrFatal", err)
	}
}

func TestPythonEnvTimeout(t *testing.T) {
	o := withStubVerifiers(t)
	o.Timeout = 300 * time.Millisecond
	e := newPython(t, "../pybridge/testdata/envs/trouble.py", nil, o)
	exs, _ := e.Examples("train")
	_, _, err := e.NewEpisode(exs[0]).Respond(context.Background(), "hang")
	if err == nil || !strings.Contains(err.Error(), "reply timed out after 300ms") {
		t.Errorf("hang: %v", err)
	}
}

func TestPythonEnvMissingPython(t *testing.T) {
	o := withStubVerifiers(t)
	t.Setenv("GRPO_PYTHON", "/nonexistent")
	_, err := env.New(guessEnv, nil, env.WithPython(o))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "GRPO_PYTHON=/nonexistent is not an executable python") {
		t.Errorf("got %v", err)
	}
}

func TestPythonEnvMissingVerifiers(t *testing.T) {
	o := withStubVerifiers(t)
	t.Setenv("PYTHONPATH", "")
	_, err := env.New(guessEnv, nil, env.WithPython(o))
	py, _ := exec.LookPath("python3")
	if err == nil || !strings.HasPrefix(err.Error(), "env "+guessEnv+": "+py+" cannot import verifiers; install it with `"+py+" -m pip install verifiers`") {
		t.Errorf("got %v", err)
	}
}

func TestPendingEpisodesEvicts(t *testing.T) {
	var dropped []string
	p := newPendingEpisodes(func(ep string) { dropped = append(dropped, ep) })
	for i := range maxPendingEpisodes + 2 {
		ep := "e" + string(rune('0'+i%10)) + strings.Repeat("x", i/10)
		p.put(ep, pybridge.Row{}, "k"+ep)
	}
	if len(dropped) != 2 || dropped[0] != "e0" || dropped[1] != "e1" {
		t.Errorf("dropped %v, want the two oldest", dropped)
	}
	if ep, _ := p.take("ke0"); ep != "" {
		t.Errorf("an evicted episode was found: %q", ep)
	}
	p.put("a", pybridge.Row{}, "k1")
	p.put("a", pybridge.Row{}, "k2") // refiled under its longer text
	if ep, _ := p.take("k1"); ep != "" {
		t.Errorf("found under its old key")
	}
	if ep, _ := p.take("k2"); ep != "a" {
		t.Errorf("take(k2) = %q", ep)
	}
	if !reflect.DeepEqual(p.keys["a"], []string(nil)) {
		t.Errorf("taken episode still filed")
	}
}
