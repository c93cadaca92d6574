package pybridge

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

// A v1 taskset (a package exporting a Taskset subclass): args fill its
// config, its tasks are the rows, the null harness is played in-process
// (the answer ends the episode) and the task's rewards score it.
func TestV1TasksetSingleTurn(t *testing.T) {
	b, _ := startEnv(t, "v1_reverse", map[string]any{"n": 2, "prefix": "x"}, Options{})
	h := b.Hello()
	if h.Generation != "v1" || h.EnvClass != "ReverseTaskset" || h.MultiTurn || h.Splits["train"] != 2 || len(h.Splits) != 1 {
		t.Fatalf("hello = %+v", h)
	}
	ctx := context.Background()
	rows, err := b.Rows(ctx, "train")
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows = %+v, %v", rows, err)
	}
	row := rows[0]
	want := []chat.Message{{Role: "system", Content: "Reverse the text in <reversed_text> tags."}, {Role: "user", Content: "xstressed"}}
	if !equalMessages(row.Prompt, want) || row.Answer != "dessertsx" || row.Info["idx"] != float64(0) || row.Task != "ReverseTask" {
		t.Errorf("row = %+v", row)
	}
	if _, err := b.Rows(ctx, "eval"); !isKind(err, KindNoSplit) {
		t.Errorf("eval: %v, want %s", err, KindNoSplit)
	}
	answer := "<reversed_text>dessertsx</reversed_text>"
	c := playTurns(t, b, "e1", row, answer)
	s, err := b.Score(ctx, "e1", row, c)
	if err != nil || s.Reward != 1 || s.Metrics["lcs"] != 1 || s.Metrics["length"] != float64(len(answer)) {
		t.Errorf("score = %+v, %v", s, err)
	}
	// A rollout played elsewhere is scored from its row's task.
	s, err = b.Score(ctx, "", row, []chat.Message{{Role: "assistant", Content: "<reversed_text>nope</reversed_text>"}})
	if err != nil || s.Reward >= 1 || s.Metrics["lcs"] != s.Reward {
		t.Errorf("unplayed = %+v, %v", s, err)
	}
}

func TestV1TasksetEpisodeEnds(t *testing.T) {
	b, _ := startEnv(t, "v1_reverse", nil, Options{})
	rows, _ := b.Rows(context.Background(), "train")
	conv := append(append([]chat.Message(nil), rows[1].Prompt...), chat.Message{Role: "assistant", Content: "x"})
	r, err := b.Reply(context.Background(), "e", &rows[1], conv)
	if err != nil || !r.Done || r.Stop != "single_turn" {
		t.Errorf("reply = %+v, %v; want done by the task's stop", r, err)
	}
}

// A package exporting an Env with its own run() is multi-turn: run drives
// the interaction, its turns reaching the model through grpo.
func TestV1TasksetEnvRun(t *testing.T) {
	b, _ := startEnv(t, "v1_codeword", nil, Options{})
	if h := b.Hello(); !h.MultiTurn || h.MaxTurns != 3 || h.EnvClass != "CodewordEnv" {
		t.Fatalf("hello = %+v", h)
	}
	ctx := context.Background()
	rows, _ := b.Rows(ctx, "train")
	row := rows[0]
	conv := append([]chat.Message(nil), row.Prompt...)
	for i, text := range []string{"A", "AB", "ABC"} {
		conv = append(conv, chat.Message{Role: "assistant", Content: text})
		in := &row
		if i > 0 {
			in = nil
		}
		r, err := b.Reply(ctx, "e1", in, conv)
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		last := i == 2
		if r.Done != last || !last && (len(r.Messages) != 1 || !strings.HasPrefix(r.Messages[0].Content, "Letter "+string(rune('2'+i)))) {
			t.Fatalf("turn %d: %+v", i+1, r)
		}
		conv = append(conv, r.Messages...)
	}
	s, err := b.Score(ctx, "e1", row, conv[len(row.Prompt):])
	if err != nil || s.Reward != 1 || s.Metrics["turns"] != 3 {
		t.Errorf("score = %+v, %v", s, err)
	}
	// An episode grpo stops early (max turns, a full cache) is dropped:
	// its run is cancelled, and the child goes on serving.
	conv = append(append([]chat.Message(nil), row.Prompt...), chat.Message{Role: "assistant", Content: "A"})
	if _, err := b.Reply(ctx, "e2", &row, conv); err != nil {
		t.Fatal(err)
	}
	if err := b.Drop(ctx, "e2"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reply(ctx, "e3", &row, conv); err != nil {
		t.Errorf("after a drop: %v", err)
	}
}

// A harness verifiers does not have, bad args and missing modules fail at
// load in one line; a package's own agent harness loads as an agent
// environment (Hello.Agent), whose rollouts run HarnessCommand.
func TestV1TasksetRefused(t *testing.T) {
	py := stubPython(t)
	dir, _ := filepath.Abs("testdata/envs")
	start := func(module string, args map[string]any) error {
		_, err := Start(context.Background(), Target{ID: "t/" + module, Module: module, ModuleDir: dir, Args: args}, Options{Python: py, Log: func(string) {}})
		return err
	}
	b, err := Start(context.Background(), Target{ID: "t/v1_agent", Module: "v1_agent", ModuleDir: dir}, Options{Python: py, Log: func(string) {}})
	if err != nil || !b.Hello().Agent || !b.Hello().MultiTurn {
		t.Errorf("own harness: %v, hello %+v", err, b)
	} else {
		cmd := b.HarnessCommand()
		if len(cmd) != 5 || cmd[0] != py || cmd[3] != "harness" || !strings.Contains(cmd[4], `"module":"v1_agent"`) {
			t.Errorf("harness command %q", cmd[3:])
		}
		b.Close()
	}
	if err := start("v1_reverse", map[string]any{"harness": "bash"}); err == nil || !strings.Contains(err.Error(), "harness 'bash' is not one this verifiers has") {
		t.Errorf("bash harness: %v", err)
	}
	if err := start("v1_reverse", map[string]any{"harness": "null", "n": 1}); err != nil {
		t.Errorf("null harness: %v", err)
	}
	if err := start("v1_reverse", map[string]any{"words": 1}); err == nil || !strings.Contains(err.Error(), "args for ReverseConfig: ReverseConfig: words: Extra inputs are not permitted") {
		t.Errorf("bad arg: %v", err)
	}
	err = start("needs_dep", nil)
	want := "env t/needs_dep: the environment needs Python module grpo_absent_dependency, which " + py + " cannot import; install it with `" + py + " -m pip install grpo_absent_dependency`"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("missing dependency: %v\nwant one line starting %q", err, want)
	}
}

func equalMessages(a, b []chat.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Role != b[i].Role || a[i].Content != b[i].Content {
			return false
		}
	}
	return true
}
