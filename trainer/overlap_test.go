package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rundir"
)

// slowReplyEnv plays the reverse fixture in two turns, its first reply
// taking 15 ms (a tool call, a sandbox): far longer than the tiny model
// takes to generate a turn, so that hiding the replies pays (a step's 64
// episodes reply one after another, about a second, well past
// rollout.OverlapPays' least reply time of 100 ms).
type slowReplyEnv struct{ env.Environment }

func (s slowReplyEnv) NewEpisode(ex env.Example) env.Episode { return &slowReply{} }

type slowReply struct{ n int }

func (r *slowReply) Respond(context.Context, string) ([]chat.Message, bool, error) {
	r.n++
	if r.n > 1 {
		return nil, true, nil
	}
	time.Sleep(15 * time.Millisecond)
	return []chat.Message{{Role: "user", Content: "Once more, reversed."}}, false, nil
}

// TestOverlapDecidedAndResumed: an environment whose replies outlast
// generation plays overlapped from its second step on; the decision is in
// each checkpoint, and a run interrupted and resumed logs, step for step,
// what the uninterrupted run logs: its third step plays overlapped too.
// (A forgotten decision shows in rollouts/overlapped_envs, and can show
// in the log-probs' last bits: TestKillAndResumeIsBitExact saw grad_norm
// move in its eighth digit on the CPU backend when one run overlapped a
// step the other did not.)
func TestOverlapDecidedAndResumed(t *testing.T) {
	dir := t.TempDir()
	const steps = 4
	cfgPath := writeRunFixture(t, dir, steps, 2)
	inner, err := env.New(filepath.Join(dir, "env"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := slowReplyEnv{inner}
	text, _ := os.ReadFile(cfgPath)
	text = []byte(strings.Replace(string(text), "id = \""+filepath.Join(dir, "env")+"\"", "id = \""+inner.ID()+"\"", 1))
	cfg, err := config.Parse(text, cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	run := func(out string, ctx context.Context, opts ...Option) error {
		_, err := New(cfg, append(opts, WithOutput(out), WithEnvironment(e), WithConfigText(text))...).Run(ctx)
		return err
	}
	ref := filepath.Join(dir, "uninterrupted")
	if err := run(ref, context.Background()); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(ref, "checkpoints", "step-2", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st checkpointState
	if err := json.Unmarshal(js, &st); err != nil || !reflect.DeepEqual(st.Overlap, []bool{true}) {
		t.Fatalf("step 2's checkpoint holds overlap %v (%v); want [true]", st.Overlap, err)
	}
	want := deterministicMetrics(t, ref)

	out := filepath.Join(dir, "interrupted")
	ctx, cancel := context.WithCancel(context.Background())
	if err := run(out, ctx, WithStepCallback(func(s StepResult) {
		if s.Step == 2 {
			cancel()
		}
	})); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("want ErrInterrupted, got %v", err)
	}
	if err := run(out, context.Background(), WithResume(out)); err != nil {
		t.Fatal(err)
	}
	got := deterministicMetrics(t, out)
	if len(got) != steps || len(want) != steps {
		t.Fatalf("%d and %d steps logged, want %d", len(got), len(want), steps)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("step %d differs after resume:\n got %v\nwant %v", i+1, got[i], want[i])
		}
	}
	for i, row := range want {
		if on, want := row["rollouts/overlapped_envs"], float64(min(i, 1)); on != want {
			t.Errorf("step %d: rollouts/overlapped_envs %v, want %v", i+1, on, want)
		}
	}
	rows, err := rundir.ReadJSONL(filepath.Join(ref, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rows[1]["time/env_replies"].(float64); r < 0.1 {
		t.Errorf("step 2 spent %v s in replies; 16 episodes × 15 ms is more", r)
	}
}
