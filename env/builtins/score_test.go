package builtins_test

import (
	"context"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
)

func scoreLine(t *testing.T, id, line string, opts env.ScoreOptions) env.ScoreResult {
	t.Helper()
	row, err := env.ParseScoreRow([]byte(line))
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	spec, _ := env.Lookup(id)
	res, err := env.Score(context.Background(), envtest.NewEnv(t, id, row.Args, env.WithVersion(row.Version)), spec.ScaleOf(row.Version), row, opts)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return res
}

// TestScoreSimpleRows: text completions, a numeric answer and scripted
// multi-turn turns (a list of texts) played through the harness.
func TestScoreSimpleRows(t *testing.T) {
	if r := scoreLine(t, "reverse-text", `{"completion": "<reversed_text>cba</reversed_text>", "answer": "cba"}`, env.ScoreOptions{}); r.Reward != 1 || r.VerifiersReward != 1 || r.Metrics["lcs"] != 1 || r.Turns != 1 || !r.EpisodeDone {
		t.Errorf("reverse-text: %+v", r)
	}
	if r := scoreLine(t, "gsm8k", `{"completion": "so \\boxed{18}", "answer": 18}`, env.ScoreOptions{}); r.Reward != 1 {
		t.Errorf("gsm8k numeric answer: %+v", r)
	}
	// Two extra turns after a single-turn episode ended are reported, not scored.
	if r := scoreLine(t, "gsm8k", `{"completion": ["\\boxed{18}", "\\boxed{19}", "x"], "answer": "18"}`, env.ScoreOptions{}); r.Reward != 1 || r.Unplayed != 2 {
		t.Errorf("gsm8k scripted turns: %+v", r)
	}
	// v1 (the default): the game's reward; a won game sends no last reply.
	r := scoreLine(t, "wordle", `{"completion": ["[plant]", "so: [crane]"], "answer": "crane"}`, env.ScoreOptions{})
	if !r.Played || r.Turns != 2 || !r.EpisodeDone || len(r.Completion) != 3 || r.Completion[1].Role != "user" || r.Metrics["game_reward"] != 1 || r.VerifiersReward != 1 {
		t.Errorf("wordle scripted: %+v", r)
	}
	row, _ := env.ParseScoreRow([]byte(`{"completion": ["<guess>[plant]</guess>", "<guess>[crane]</guess>"], "answer": "crane"}`))
	v0 := envtest.NewEnv(t, "wordle", nil, env.WithVersion("v0"))
	r, err := env.Score(context.Background(), v0, 1/2.2, row, env.ScoreOptions{})
	if err != nil || !r.Played || len(r.Completion) != 4 || r.Metrics["correct_answer"] != 1 || !envtest.Near(r.VerifiersReward, 1+0.5+0.2) {
		t.Errorf("wordle v0 scripted: %+v %v", r, err)
	}
	for _, bad := range []string{`{"answer": "x"}`, `{"completion": 3}`, `{"completion": [{"content": "x"}]}`, `not json`} {
		if _, err := env.ParseScoreRow([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestScoreReplaysGolden: each wordle golden case, given only its
// assistant turns, is played through grpo's game and scores what
// verifiers scored on the reference game's transcript; with the replies
// given and Replay set, none differs, and a wrong reply is named.
func TestScoreReplaysGolden(t *testing.T) {
	n := 0
	for _, c := range loadGoldenCases(t) {
		if !c.Replayed {
			continue
		}
		n++
		var turns []chat.Message
		for _, m := range c.Completion {
			if m.Role == "assistant" {
				turns = append(turns, m)
			}
		}
		spec, _ := env.Lookup(c.Env)
		e := envtest.NewEnv(t, c.Env, c.Args, env.WithVersion(c.Version))
		row := env.ScoreRow{Prompt: c.Prompt, Completion: turns, Answer: c.Answer, Info: c.Info}
		res, err := env.Score(context.Background(), e, spec.ScaleOf(c.Version), row, env.ScoreOptions{})
		if err != nil || !envtest.Near(res.VerifiersReward, c.Reward) || res.EpisodeDone != c.GameOver {
			t.Errorf("%s/%s: %+v (%v), verifiers %v", c.Env, c.Name, res, err, c.Reward)
		}
		row.Completion = c.Completion
		if res, _ := env.Score(context.Background(), e, spec.ScaleOf(c.Version), row, env.ScoreOptions{Replay: true}); res.ReplyDiffers != "" || !envtest.Near(res.VerifiersReward, c.Reward) {
			t.Errorf("%s/%s replayed: %+v", c.Env, c.Name, res)
		}
		if len(c.Completion) < 2 || c.Completion[1].Role != "user" {
			continue // a game won on its first turn has no reply to change
		}
		wrong := append([]chat.Message(nil), c.Completion...)
		wrong[1].Content = "something else"
		row.Completion = wrong
		if res, _ := env.Score(context.Background(), e, spec.ScaleOf(c.Version), row, env.ScoreOptions{Replay: true}); res.ReplyDiffers != "turn 1" {
			t.Errorf("%s/%s: a changed reply gave %q", c.Env, c.Name, res.ReplyDiffers)
		}
		if res, _ := env.Score(context.Background(), e, spec.ScaleOf(c.Version), row, env.ScoreOptions{}); res.Played || res.Turns == 0 {
			t.Errorf("%s/%s: given replies were not scored as given: %+v", c.Env, c.Name, res)
		}
	}
	if n < 5 {
		t.Errorf("%d replayed golden cases", n)
	}
}
