package wordle

import (
	"context"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
	"github.com/grpo-dev/grpo/rubric"
)

// The expected marks were checked against TextArena's _evaluate_guess run in
// Python on the same pairs.
func TestWordleFeedback(t *testing.T) {
	for _, c := range []struct{ secret, guess, want string }{
		{"crane", "crane", "GGGGG"},
		{"crane", "nacre", "YYYYG"},
		{"apple", "paper", "YYGYX"}, // second p green; first p yellow: the secret has two
		{"abbey", "babes", "YYGGX"}, // two b's in each
		{"eerie", "eeeee", "GGXXG"}, // three e's in secret, five guessed: extras X
		{"robot", "ooooo", "XGXGX"}, // only the two o's in place are G
		{"lemon", "eeeel", "XGXXY"}, // the one e is matched in place; l is yellow
		{"sheep", "eeeee", "XXGGX"}, // both e's green, none left for yellow
		{"abcde", "fghij", "XXXXX"},
	} {
		if got := string(wordleFeedback(c.secret, c.guess)); got != c.want {
			t.Errorf("feedback(%s, %s) = %s, want %s", c.secret, c.guess, got, c.want)
		}
	}
}

func guessTurn(w string) string { return "thinking...\n<guess>[" + w + "]</guess>" }

// playWordle plays the assistant turns through the episode and returns the
// scored rollout with the game's replies, as a rollout records them.
func playWordle(t *testing.T, e env.Environment, ex env.Example, turns ...string) rubric.Result {
	t.Helper()
	ep := e.NewEpisode(ex)
	r := rubric.Rollout{Prompt: ex.Prompt, Answer: ex.Answer, Info: ex.Info}
	for _, turn := range turns {
		r.Completion = append(r.Completion, chat.Message{Role: "assistant", Content: turn})
		reply, done, err := ep.Respond(context.Background(), turn)
		if err != nil {
			t.Fatal(err)
		}
		r.Completion = append(r.Completion, reply...)
		if done {
			break
		}
	}
	return e.Rubric().Score(context.Background(), r)
}

// v0 (verifiers 8d4b33247): <guess> tags and four reward functions.
func TestWordleEpisodeAndRewardOrdering(t *testing.T) {
	e := envtest.NewEnv(t, "wordle", map[string]any{"num_train_examples": 10, "num_eval_examples": 2, "words": []any{"crane", "plant", "robot"}}, env.WithVersion("v0"))
	exs, err := e.Examples("train")
	if err != nil || len(exs) != 10 {
		t.Fatalf("%d, %v", len(exs), err)
	}
	eval, _ := e.Examples("eval")
	if len(eval) != 2 {
		t.Fatalf("eval %d", len(eval))
	}
	ex := exs[0]
	ex.Answer = "plant"
	if !strings.HasPrefix(ex.Prompt[1].Content, "\n[GAME] You are Playing Wordle.") || !strings.Contains(ex.Prompt[1].Content, "wrap your word in square brackets") || ex.Prompt[0].Content != wordleSystemPrompt {
		t.Errorf("prompt %+v", ex.Prompt)
	}
	ep := e.NewEpisode(ex)
	ctx := context.Background()
	reply, done, _ := ep.Respond(ctx, guessTurn("crane"))
	if done || reply[0].Content != "\nC R A N E\nX X G G X\nYou have 5 guesses left." {
		t.Fatalf("reply %q done %v", reply[0].Content, done)
	}
	// TextArena adds the brackets a bare guess lacks, so this is crane again.
	reply, done, _ = ep.Respond(ctx, "<guess>crane</guess>")
	if done || !strings.Contains(reply[0].Content, "already guessed 'crane'") {
		t.Fatalf("repeated unbracketed guess: %q %v", reply[0].Content, done)
	}
	reply, done, _ = ep.Respond(ctx, guessTurn("qwxyz"))
	if !done || reply[0].Content != "Invalid Move: 'qwxyz' is not an English word." {
		t.Fatalf("second invalid move in a row: %q %v", reply[0].Content, done)
	}
	ep = e.NewEpisode(ex)
	ep.Respond(ctx, guessTurn("crane"))
	reply, done, _ = ep.Respond(ctx, guessTurn("PLANT"))
	if !done || !strings.Contains(reply[0].Content, "Congratulations") {
		t.Fatalf("solved: %q %v", reply[0].Content, done)
	}

	// guessTurn's text before the tag costs format 0.2 of 1 per turn (0.8).
	solvedFast := playWordle(t, e, ex, guessTurn("plant"))
	solvedSlow := playWordle(t, e, ex, guessTurn("crane"), guessTurn("slant"), guessTurn("plane"), guessTurn("plant"))
	greens := playWordle(t, e, ex, guessTurn("crane"), guessTurn("slant"))
	nothing := playWordle(t, e, ex, "I give up", "still no")
	if !envtest.Near(solvedFast.Reward, (1+1+0.2*0.8)/2.2) {
		t.Errorf("solved in one scored %v", solvedFast.Reward)
	}
	if !envtest.Near(solvedSlow.Reward, (1+0.25+0.2*0.8)/2.2) {
		t.Errorf("solved in four scored %v", solvedSlow.Reward)
	}
	// slant vs plant = XGGGG: 0.8 partial, read from the game's reply.
	if !envtest.Near(greens.Reward, (0.8+0.2*0.8)/2.2) || greens.Metrics["partial_answer"] != 0.8 {
		t.Errorf("unsolved with greens scored %v %v", greens.Reward, greens.Metrics)
	}
	// Two turns without a tag: format 0.2 each, nothing else.
	if !envtest.Near(nothing.Reward, 0.2*0.2/2.2) || nothing.Metrics["format_reward"] != 0.2 {
		t.Errorf("no guess scored %v %v", nothing.Reward, nothing.Metrics)
	}
	if !(solvedFast.Reward > solvedSlow.Reward && solvedSlow.Reward > greens.Reward && greens.Reward > nothing.Reward) {
		t.Errorf("ordering broken: %v %v %v %v", solvedFast.Reward, solvedSlow.Reward, greens.Reward, nothing.Reward)
	}
	// The best unsolved game (four greens and a yellow is impossible; four
	// greens) stays below the slowest solve in six guesses.
	six := playWordle(t, e, ex, guessTurn("crane"), guessTurn("robot"), guessTurn("eerie"), guessTurn("abbey"), guessTurn("slant"), guessTurn("plant"))
	if six.Reward <= greens.Reward || six.Metrics["correct_answer"] != 1 {
		t.Errorf("solve in six %v %v not above unsolved %v", six.Reward, six.Metrics, greens.Reward)
	}
}

func TestWordleWordsArg(t *testing.T) {
	if _, err := env.New("wordle", map[string]any{"words": []any{"toolong"}}); err == nil || !strings.Contains(err.Error(), `"toolong"`) {
		t.Errorf("bad word: %v", err)
	}
	if _, err := env.New("wordle", map[string]any{"words": "crane"}); err == nil || !strings.Contains(err.Error(), "must be list, got string") {
		t.Errorf("string for list: %v", err)
	}
	if _, err := env.New("wordle", map[string]any{"words": []any{"qwxyz"}}); err == nil || !strings.Contains(err.Error(), "guess dictionary") {
		t.Errorf("secret that is no valid guess: %v", err)
	}
	seen := map[string]bool{}
	for _, w := range wordleWords {
		if !isWordleWord(w) || seen[w] {
			t.Errorf("builtin word %q is not five a-z letters or repeats", w)
		}
		if !wordleDictionary[w] {
			t.Errorf("builtin secret %q is not a word TextArena accepts as a guess", w)
		}
		seen[w] = true
	}
	if len(wordleDictionary) < 5000 || !wordleDictionary["crane"] || wordleDictionary["xqzvb"] {
		t.Errorf("guess dictionary has %d words; want TextArena's hunspell five-letter words", len(wordleDictionary))
	}
}
