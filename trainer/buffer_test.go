package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rubric"
	"github.com/grpo-dev/grpo/rundir"
)

// byAnswerEnv scores a rollout by its example's answer alone — 1 for the
// first four words of the reverse fixture, 0 for the next four, 0 or 0.5
// by the completion's length otherwise — and records which examples each
// step plays.
type byAnswerEnv struct {
	env.Environment
	mu     sync.Mutex
	played map[string]int    // example id → rollouts played in the current step
	answer map[string]string // example id → its answer
}

var easyAnswers = map[string]bool{"tac": true, "god": true, "drib": true, "hsif": true}
var hardAnswers = map[string]bool{"pmal": true, "eert": true, "kcor": true, "noom": true}

func (b *byAnswerEnv) NewEpisode(ex env.Example) env.Episode {
	b.mu.Lock()
	b.played[ex.ID]++
	b.answer[ex.ID] = ex.Answer
	b.mu.Unlock()
	return b.Environment.NewEpisode(ex)
}

func (b *byAnswerEnv) Rubric() *rubric.Rubric {
	rb, err := rubric.Weighted(rubric.Term{Name: "by_answer", Weight: 1, Func: func(_ context.Context, r rubric.Rollout) (rubric.Score, error) {
		switch {
		case easyAnswers[r.Answer]:
			return rubric.Score{Value: 1}, nil
		case hardAnswers[r.Answer]:
			return rubric.Score{Value: 0}, nil
		}
		return rubric.Score{Value: 0.5 * float64(len(r.Completion[len(r.Completion)-1].Content)%2)}, nil
	}})
	if err != nil {
		panic(err)
	}
	return rb
}

// TestDifficultyBuffer runs [buffer] end to end: in each step the groups
// that all succeed or all fail are dropped and refilled (never more than
// oversampling_factor × batch_size rollouts played), their examples go
// to the easy and hard pools and are never drawn again, the metrics say
// so under prime-rl's names, and the pools are in every checkpoint and
// come back on resume.
func TestDifficultyBuffer(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeRunFixture(t, dir, 3, 1)
	inner, err := env.New(filepath.Join(dir, "env"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &byAnswerEnv{Environment: inner, played: map[string]int{}, answer: map[string]string{}}
	text, _ := os.ReadFile(cfgPath)
	doc := strings.Replace(string(text), "id = \""+filepath.Join(dir, "env")+"\"", "id = \""+inner.ID()+"\"", 1)
	doc = "oversampling_factor = 1.5\n" + doc + `
[loss]
filter_zero_advantages = false

[buffer]
online_difficulty_filtering = true
easy_threshold = 0.9
hard_threshold = 0.1
`
	cfg, err := config.Parse([]byte(doc), "run.toml")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	pooled := map[string]bool{}
	step := 0
	onStep := func(StepResult) {
		e.mu.Lock()
		defer e.mu.Unlock()
		step++
		total := 0
		for id, n := range e.played {
			total += n
			if pooled[id] {
				t.Errorf("step %d played example %s (%q), which an earlier step put in a pool", step, id, e.answer[id])
			}
		}
		// batch_size 16 → at most 1.5 × 16 rollouts.
		if total > 24 || total < 16 {
			t.Errorf("step %d played %d rollouts, want 16..24", step, total)
		}
		for id := range e.played {
			if a := e.answer[id]; easyAnswers[a] || hardAnswers[a] {
				pooled[id] = true
			}
		}
		e.played = map[string]int{}
	}
	if _, err := New(cfg, WithOutput(out), WithEnvironment(e), WithStepCallback(onStep)).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := rundir.ReadJSONL(filepath.Join(out, "metrics.jsonl"))
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d metric rows, %v", len(rows), err)
	}
	first := rows[0]
	for _, k := range []string{"evicted_examples/easy", "evicted_examples/hard", "filtered_rollouts/easy", "filtered_rollouts/hard", "pool/easy", "pool/normal", "pool/hard", "filter/refill_groups"} {
		if _, ok := first[k]; !ok {
			t.Errorf("step 1 lacks metric %s: %v", k, first)
		}
	}
	// 4 groups a step; 16 of the 24 examples are easy or hard, so the
	// first step drops some and refills (at most 2 more groups).
	if r := first["filter/refill_groups"].(float64); r < 1 || r > 2 {
		t.Errorf("step 1 refilled %v groups, want 1 or 2", r)
	}
	if fr := first["filtered_rollouts/easy"].(float64) + first["filtered_rollouts/hard"].(float64); fr <= 0 {
		t.Errorf("step 1 filtered no rollout")
	}
	if p := rows[2]["pool/easy"].(float64) + rows[2]["pool/hard"].(float64); p <= first["pool/easy"].(float64)+first["pool/hard"].(float64)-1e-9 {
		t.Errorf("the pools shrank: %v then %v", first, rows[2])
	}

	// The last checkpoint holds the pools; a resume with easy_fraction 1
	// returns every easy example, which the next step may draw again.
	js, err := os.ReadFile(filepath.Join(out, "checkpoints", "step-3", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st checkpointState
	if err := json.Unmarshal(js, &st); err != nil || st.Pools == nil {
		t.Fatalf("state.json without pools: %s", js)
	}
	n := 0
	for _, ids := range [][]int{st.Pools.Easy[0], st.Pools.Hard[0]} {
		n += len(ids)
	}
	if n != len(pooled) {
		t.Errorf("checkpoint pools %d examples, the run set aside %d: %s", n, len(pooled), js)
	}

	// Interrupted after step 2 and resumed, the run ends with the pools of
	// the run above: they came back from step 2's checkpoint, and step 3
	// played none of their examples (onStep checks).
	out2 := filepath.Join(dir, "run2")
	ctx, cancel := context.WithCancel(context.Background())
	pooled, step = map[string]bool{}, 0
	_, err = New(cfg, WithOutput(out2), WithConfigText([]byte(doc)), WithEnvironment(e), WithStepCallback(func(s StepResult) {
		onStep(s)
		if s.Step == 2 {
			cancel()
		}
	})).Run(ctx)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("want ErrInterrupted, got %v", err)
	}
	step, e.played = 2, map[string]int{} // the interrupted step 3 played some
	if _, err := New(cfg, WithOutput(out2), WithConfigText([]byte(doc)), WithEnvironment(e), WithStepCallback(onStep), WithResume(out2)).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	js2, err := os.ReadFile(filepath.Join(out2, "checkpoints", "step-3", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st2 checkpointState
	if err := json.Unmarshal(js2, &st2); err != nil || !reflect.DeepEqual(st2.Pools, st.Pools) || !reflect.DeepEqual(st2.Cursors, st.Cursors) {
		t.Errorf("resumed run ends with\n%s\nthe uninterrupted one with\n%s", js2, js)
	}
}

// stampedEnv records the step the trainer is in when each episode starts.
type stampedEnv struct {
	*byAnswerEnv
	step  int
	plays map[string][]int // example id → the step of each episode
}

func (s *stampedEnv) NewEpisode(ex env.Example) env.Episode {
	s.mu.Lock()
	s.plays[ex.ID] = append(s.plays[ex.ID], s.step)
	s.mu.Unlock()
	return s.byAnswerEnv.NewEpisode(ex)
}

// TestAsyncDifficultyBuffer runs [buffer] with max_async_level = 1 on an
// [inference] server: the pools judge each group the producer hands out,
// the dropped ones are refilled from groups played ahead (at most
// oversampling_factor × the batch looked at), and an example set aside is
// not drawn again: over two epochs, no easy or hard example starts an
// episode more than three steps after the step that pooled it (a draw
// made before the pools saw its group may still play, within the
// producer's window of two batches).
func TestAsyncDifficultyBuffer(t *testing.T) {
	s := newScriptedServer(t)
	const steps = 14
	path := inferenceRun(t, s, steps, 0, "max_async_level = 1\noversampling_factor = 1.5")
	dir := filepath.Dir(path)
	inner, err := env.New(filepath.Join(dir, "env"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &stampedEnv{byAnswerEnv: &byAnswerEnv{Environment: inner, played: map[string]int{}, answer: map[string]string{}}, plays: map[string][]int{}}
	text, _ := os.ReadFile(path)
	doc := strings.Replace(string(text), "id = \""+filepath.Join(dir, "env")+"\"", "id = \""+inner.ID()+"\"", 1) + `
[buffer]
online_difficulty_filtering = true
easy_threshold = 0.9
hard_threshold = 0.1
`
	cfg, err := config.Parse([]byte(doc), "run.toml")
	if err != nil {
		t.Fatal(err)
	}
	pooledAt := map[string]int{}
	onStep := func(StepResult) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.step++
		for id := range e.plays {
			if a := e.answer[id]; (easyAnswers[a] || hardAnswers[a]) && pooledAt[id] == 0 {
				pooledAt[id] = e.step
			}
		}
	}
	out := filepath.Join(dir, "run")
	if _, err := New(cfg, WithOutput(out), WithEnvironment(e), WithStepCallback(onStep)).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := rundir.ReadJSONL(filepath.Join(out, "metrics.jsonl"))
	if err != nil || len(rows) != steps {
		t.Fatalf("%d metric rows, %v", len(rows), err)
	}
	filtered := 0.0
	for i, row := range rows {
		easy, _ := row["filtered_rollouts/easy"].(float64)
		hard, _ := row["filtered_rollouts/hard"].(float64)
		filtered += easy + hard
		// 4 groups a batch, at most 1.5 × 4 looked at.
		if r := row["filter/refill_groups"].(float64); r < 0 || r > 2 {
			t.Errorf("step %d refilled %v groups, want 0..2", i+1, r)
		}
		if a := row["off_policy/age_max"].(float64); a > 1 {
			t.Errorf("step %d: off_policy/age_max %v", i+1, a)
		}
	}
	if filtered == 0 {
		t.Error("no group was filtered: the pools did not judge the producer's groups")
	}
	if p := rows[steps-1]["pool/easy"].(float64) + rows[steps-1]["pool/hard"].(float64); p <= 0 {
		t.Errorf("nothing pooled after %d steps: %v", steps, rows[steps-1])
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	total := 0
	for id, at := range e.plays {
		total += len(at)
		if p, ok := pooledAt[id]; ok && at[len(at)-1] > p+3 {
			t.Errorf("example %s (%q), pooled at step %d, started episodes at steps %v", id, e.answer[id], p, at)
		}
	}
	if total <= 2*24*4 {
		t.Errorf("%d rollouts played: fewer than two epochs of draws, so the test shows nothing", total)
	}
	noProducerLeft(t)
}
