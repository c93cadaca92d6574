// Package pyenv runs Python (verifiers) environments: it resolves a
// config's id to an installed module or a path, serves the environment
// through a python child (package pybridge) and installs environments
// from the Environments Hub or a directory, as `prime env install` does.
// It registers its finder with package env on init.
package pyenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/pybridge"
	"github.com/grpo-dev/grpo/rubric"
)

// pythonEnv is a verifiers environment served by a python child: its
// datasets, its harness (env_response, stop conditions) and its rubric
// all run there; grpo only samples.
type pythonEnv struct {
	id      string
	b       *pybridge.Bridge
	rb      *rubric.Rubric
	pending *pendingEpisodes
	nextEp  atomic.Int64
	// groups is set for a rubric with group reward functions.
	groups *groupScorer

	mu     sync.Mutex
	splits map[string][]env.Example
	rows   map[string]pybridge.Row // by Example.ID, as the child sent them
}

// newPythonEnv starts the child of target t with the bridge settings o
// (env.Options.Python).
func newPythonEnv(t pybridge.Target, o pybridge.Options) (*pythonEnv, error) {
	b, err := pybridge.Start(context.Background(), t, runtimeOptions(o))
	if err != nil {
		return nil, err
	}
	e := &pythonEnv{id: t.ID, b: b, splits: map[string][]env.Example{}, rows: map[string]pybridge.Row{}}
	e.pending = newPendingEpisodes(func(ep string) { go b.Drop(context.Background(), ep) })
	if b.Hello().GroupRewards {
		wait := o.Timeout
		if wait <= 0 {
			wait = 2 * time.Minute
		}
		e.groups = newGroupScorer(b, wait)
	}
	// One term: verifiers' weighted reward, with each of its reward
	// functions as a metric ("reward/<function>").
	e.rb, err = rubric.Weighted(rubric.Term{Name: "reward", Weight: 1, Func: e.score})
	if err != nil {
		b.Close()
		return nil, err
	}
	return e, nil
}

func (e *pythonEnv) ID() string             { return e.id }
func (e *pythonEnv) Rubric() *rubric.Rubric { return e.rb }

// Close stops the python child and what it started. An environment that
// is never closed has them killed when grpo exits, however it exits
// (package pybridge: parent-death signal and the child's watchdog).
func (e *pythonEnv) Close() error { return e.b.Close() }

// MaxTurns is verifiers' max_turns; an environment without a limit (-1)
// is sized as one turn, and longer episodes end when their cache slot is
// full: give it a max_turns arg to size it.
func (e *pythonEnv) MaxTurns() int { return max(1, e.b.Hello().MaxTurns) }

// Examples fetches a split from the child once and keeps it.
func (e *pythonEnv) Examples(split string) ([]env.Example, error) {
	if split != "train" && split != "eval" {
		return nil, env.SplitErr(e.id, split)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if exs, ok := e.splits[split]; ok {
		return append([]env.Example(nil), exs...), nil
	}
	if _, ok := e.b.Hello().Splits[split]; !ok {
		return nil, fmt.Errorf("env %s: %w %q: the verifiers environment has no eval_dataset", e.id, env.ErrNoSplit, split)
	}
	rows, err := e.b.Rows(context.Background(), split)
	if err != nil {
		return nil, e.wrap(err)
	}
	exs := make([]env.Example, len(rows))
	for i, r := range rows {
		id := split + "-" + strconv.Itoa(i)
		if r.ExampleID != nil {
			id = split + "-" + fmt.Sprint(r.ExampleID)
		}
		exs[i] = env.Example{ID: id, Prompt: r.Prompt, Answer: answerText(r.Answer), Info: r.Info}
		e.rows[id] = r
	}
	e.splits[split] = exs
	return append([]env.Example(nil), exs...), nil
}

// answerText is a verifiers answer as grpo's string: itself when it is
// one, else its JSON. The child keeps the original for scoring.
func answerText(a any) string {
	if s, ok := a.(string); ok || a == nil {
		return s
	}
	b, _ := json.Marshal(a)
	return string(b)
}

// wrap marks a bridge that gave up as fatal for the run.
func (e *pythonEnv) wrap(err error) error {
	if errors.Is(err, pybridge.ErrGaveUp) {
		return env.Fatal(err)
	}
	return err
}

// NewEpisode starts an episode; its State is made in the child on the
// first turn, from the row the child served for ex.
func (e *pythonEnv) NewEpisode(ex env.Example) env.Episode {
	e.mu.Lock()
	row, ok := e.rows[ex.ID]
	e.mu.Unlock()
	if !ok || !sameMessages(row.Prompt, ex.Prompt) {
		// An example made elsewhere (a test's, a GEPA candidate's prompt).
		row = pybridge.Row{Prompt: ex.Prompt, Answer: ex.Answer, Info: ex.Info}
	}
	id := "e" + strconv.FormatInt(e.nextEp.Add(1), 10)
	if e.groups != nil {
		e.groups.join(ex.ID, id)
	}
	return &pythonEpisode{e: e, id: id, row: row, conv: append([]chat.Message(nil), ex.Prompt...)}
}

func sameMessages(a, b []chat.Message) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

type pythonEpisode struct {
	e       *pythonEnv
	id      string
	row     pybridge.Row
	conv    []chat.Message // prompt, then the completion so far
	started bool
}

func (p *pythonEpisode) Respond(ctx context.Context, assistant string) ([]chat.Message, bool, error) {
	p.conv = append(p.conv, chat.Message{Role: "assistant", Content: assistant})
	var input *pybridge.Row
	if !p.started {
		input = &p.row
	}
	r, err := p.e.b.Reply(ctx, p.id, input, p.conv)
	if g := p.e.groups; g != nil {
		g.turn(p.id, err == nil)
		if err != nil || r.Done {
			g.end(p.id)
		}
	}
	if err != nil {
		p.e.pending.forget(p.id)
		return nil, false, p.e.wrap(err)
	}
	p.started = true
	// The rollout ends here or after the next turn; file the episode under
	// its text so far (and with the environment's final words, should a
	// caller keep them), for the rubric to find its State.
	completion := p.conv[len(p.row.Prompt):]
	keys := []string{fingerprint(p.row.Prompt, completion)}
	if r.Done && len(r.Messages) > 0 {
		keys = append(keys, fingerprint(p.row.Prompt, append(completion[:len(completion):len(completion)], r.Messages...)))
	}
	p.e.pending.put(p.id, p.row, keys...)
	if !r.Done {
		p.conv = append(p.conv, r.Messages...)
	}
	return r.Messages, r.Done, nil
}

// Close ends the episode however it ended (package rollout closes every
// episode): the last of a group to end has the group scored.
func (p *pythonEpisode) Close() error {
	if p.e.groups != nil {
		p.e.groups.end(p.id)
	}
	return nil
}

// score runs the verifiers rubric on a rollout: on the State of the
// episode it came from when there is one, else on a State rebuilt from
// the rollout's row (a rollout grpo did not play, as `grpo env score`
// gives).
func (e *pythonEnv) score(ctx context.Context, r rubric.Rollout) (rubric.Score, error) {
	ep, row := e.pending.take(fingerprint(r.Prompt, r.Completion))
	if ep == "" {
		row = pybridge.Row{Prompt: r.Prompt, Answer: r.Answer, Info: r.Info}
		if id, ok := r.Info[exampleIDKey]; ok { // an agent rollout (pythonAgentEnv)
			row.ExampleID, row.Info = id, maps.Clone(r.Info)
			delete(row.Info, exampleIDKey)
		}
	} else if e.groups != nil {
		s, ok, err := e.groups.result(ctx, ep)
		if err != nil {
			return rubric.Score{}, e.wrap(err)
		}
		if ok {
			return s, nil
		}
	}
	s, err := e.b.Score(ctx, ep, row, r.Completion)
	if err != nil {
		return rubric.Score{}, e.wrap(err)
	}
	return rubric.Score{Value: s.Reward, Metrics: s.Metrics}, nil
}
