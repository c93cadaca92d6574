// Package wordle is the wordle builtin: a game of guesses with feedback,
// as Prime Intellect's wordle over TextArena's rules. It registers itself
// with package env on init.
package wordle

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/rubric"
)

// wordle follows Prime Intellect's wordle environment at verifiers
// 8d4b33247: TextArena's Wordle-v0 (as of 548413a04, its last commit
// before that) behind verifiers' TextArenaEnv. The prompt, the game's
// replies (after wordle_feedback_fn), the guess read from each turn
// (XMLParser.parse_answer: the first <guess> of the latest assistant turn
// that has one, "None" when none has), TextArena's bracket wrapping, its
// checks (five letters, not guessed before, an English word) and its
// error allowance (one invalid move; a second in a row ends the game) are
// the same, and so are the four reward functions and their metrics:
// correct_answer, partial_answer (from the latest three-line feedback
// message), length_bonus and format_reward (XMLParser's, averaged over
// turns). Lab weights them 1, 1, 1, 0.2, a sum of at most 2.2; grpo
// divides each weight by 2.2 so that the reward lies in [0, 1] (Spec's
// RewardScale says so). Differences: secrets come from a builtin list of
// common words (TextArena draws NLTK's basic-English nouns), and guesses
// are checked against the hunspell en_GB and en_US lists TextArena bundles
// but not against NLTK's words corpus, which TextArena also accepts.

const wordleSystemPrompt = "You are a competitive game player. Make sure you read the game instructions carefully, and always follow the required format.\n\nIn each turn, think step-by-step, then give your guess inside <guess>...</guess> tags."

const (
	wordleLength = 5
	// wordleScale puts Lab's weighted sum (at most 1 + 1 + 0.2) into [0, 1].
	wordleScale = 1 / 2.2
)

func init() {
	env.MustRegister(env.Spec{
		ID: "wordle",
		Description: "multi-turn Wordle (TextArena Wordle-v0 as verifiers 8d4b33247 plays it): guess a five-letter word with G/Y/X feedback; " +
			"reward = (correct_answer + partial_answer + length_bonus + 0.2·format_reward) / 2.2, Lab's weighted sum scaled into [0, 1]",
		RewardScale: wordleScale,
		Args: []env.ArgSpec{
			{Name: "num_train_examples", Type: env.ArgInt, Default: 2000, Help: "training games"},
			{Name: "num_eval_examples", Type: env.ArgInt, Default: 20, Help: "eval games"},
			{Name: "system_prompt", Type: env.ArgString, Default: wordleSystemPrompt, Help: "system message"},
			{Name: "path_to_system_prompt", Type: env.ArgString, Default: "", Help: "file whose text is the system message (~ expanded), replacing system_prompt; \"\" = none"},
			{Name: "max_turns", Type: env.ArgInt, Default: -1, Help: "most assistant turns per game, as MultiTurnEnv's (-1 = until the game ends)"},
			{Name: "seed", Type: env.ArgInt, Default: 0, Help: "seed for drawing secret words"},
			{Name: "num_guesses", Type: env.ArgInt, Default: 6, Help: "guesses per game"},
			{Name: "words", Type: env.ArgList, Default: []any{}, Help: "secret words to draw from (five letters each); [] = builtin list"},
		},
		New: newWordle,
	})
}

type wordle struct {
	args  env.Args
	words []string
	rb    *rubric.Rubric
}

func newWordle(a env.Args, _ env.Options) (env.Environment, error) {
	if a.Int("num_guesses") < 1 {
		return nil, fmt.Errorf("num_guesses must be at least 1, got %d", a.Int("num_guesses"))
	}
	words := wordleWords
	if custom := a.List("words"); len(custom) > 0 {
		words = nil
		for _, w := range custom {
			s, ok := w.(string)
			if !ok || !isWordleWord(strings.ToLower(s)) {
				return nil, fmt.Errorf("words: %v is not a five-letter word of a-z", env.FormatValue(w))
			}
			if !wordleDictionary[strings.ToLower(s)] {
				return nil, fmt.Errorf("words: %q is not in the guess dictionary (TextArena's hunspell lists), so no guess could ever match it", s)
			}
			words = append(words, strings.ToLower(s))
		}
	}
	if p := a.String("path_to_system_prompt"); p != "" {
		// verifiers' SystemMessage.from_path: the file's text, unchanged.
		text, err := os.ReadFile(expandHome(p))
		if err != nil {
			return nil, fmt.Errorf("path_to_system_prompt: %v", err)
		}
		a = maps.Clone(a)
		a["system_prompt"] = string(text)
	}
	format, err := rubric.XMLFormatReward("guess")
	if err != nil {
		return nil, err
	}
	e := &wordle{args: a, words: words}
	e.rb = lab.MustRubric(
		rubric.Term{Name: "correct_answer", Weight: wordleScale, Func: rubric.Reward(wordleCorrect)},
		rubric.Term{Name: "partial_answer", Weight: wordleScale, Func: rubric.Reward(wordlePartial)},
		rubric.Term{Name: "length_bonus", Weight: wordleScale, Func: rubric.Reward(wordleLengthBonus)},
		rubric.Term{Name: "format_reward", Weight: 0.2 * wordleScale, Func: format},
	)
	return e, nil
}

func isWordleWord(w string) bool {
	if len(w) != wordleLength {
		return false
	}
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func (e *wordle) ID() string             { return "wordle" }
func (e *wordle) Rubric() *rubric.Rubric { return e.rb }

// gamePrompt is TextArena's player prompt as its LLMObservationWrapper
// renders it, which TextArenaEnv uses as the question unchanged.
func (e *wordle) gamePrompt() string {
	return fmt.Sprintf("\n[GAME] You are Playing Wordle.\nA secret %d-letter word has been chosen. You have %d attempts to guess it.\n"+
		"For each guess, wrap your word in square brackets (e.g., '[apple]').\n"+
		"Feedback for each letter will be given as follows:\n"+
		"  - G (green): correct letter in the correct position\n"+
		"  - Y (yellow): letter exists in the word but in the wrong position\n"+
		"  - X (wrong): letter is not in the word\n"+
		"Enter your guess to begin.\n", wordleLength, e.args.Int("num_guesses"))
}

// Examples draws secret words as TextArenaEnv does: one stream from seed,
// the first num_train_examples for train and the next num_eval_examples
// for eval.
func (e *wordle) Examples(split string) ([]env.Example, error) {
	nTrain, nEval := max(e.args.Int("num_train_examples"), 0), max(e.args.Int("num_eval_examples"), 0)
	lo, hi := 0, nTrain
	switch split {
	case "train":
	case "eval":
		lo, hi = nTrain, nTrain+nEval
	default:
		return nil, env.SplitErr(e.ID(), split)
	}
	r := lab.NewRNG(e.args.Int("seed"), 0)
	prompt := env.ChatPrompt(e.args.String("system_prompt"), e.gamePrompt())
	out := make([]env.Example, 0, hi-lo)
	for i := 0; i < hi; i++ {
		w := lab.Pick(r, e.words)
		if i >= lo {
			out = append(out, env.Example{ID: split + "-" + strconv.Itoa(i-lo), Prompt: prompt, Answer: w})
		}
	}
	return out, nil
}

type wordleEpisode struct {
	game            *wordleGame
	turns, maxTurns int
}

func (e *wordle) NewEpisode(ex env.Example) env.Episode {
	return &wordleEpisode{game: &wordleGame{secret: ex.Answer, maxGuesses: e.args.Int("num_guesses")}, maxTurns: e.args.Int("max_turns")}
}

func (ep *wordleEpisode) Respond(_ context.Context, assistant string) ([]chat.Message, bool, error) {
	// MultiTurnEnv checks max_turns before the environment answers, so the
	// last turn's guess gets no reply.
	if ep.turns++; ep.maxTurns > 0 && ep.turns >= ep.maxTurns {
		return nil, true, nil
	}
	msg, done := ep.game.play(assistant)
	return []chat.Message{{Role: "user", Content: msg}}, done, nil
}

// expandHome turns a leading "~/" into the home directory, as Python's
// Path.expanduser does for path_to_system_prompt.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// MaxTurns bounds a game: num_guesses valid guesses, each of which may
// follow one invalid move (a second invalid move in a row ends the game),
// so at most 2 × num_guesses turns.
func (e *wordle) MaxTurns() int { return 2 * e.args.Int("num_guesses") }
