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

// wordle has two behaviours (Spec.Versions). v1, the default, is verifiers
// a60a606's wordle taskset: the TextArena taskset pinned to Wordle-v0
// (textarena 0.7.4), played by TextArenaEnv.run (game_v1.go): an
// infinite stream of games, game i seeded i; the whole reply is the move;
// one reward, game_reward, from the game itself (rewards_v1.go).
//
// v0 is verifiers 8d4b33247's wordle: TextArena's Wordle-v0 behind
// verifiers' TextArenaEnv. The prompt, the game's replies (after
// wordle_feedback_fn), the guess read from each turn
// (XMLParser.parse_answer: the first <guess> of the latest assistant turn
// that has one, "None" when none has), TextArena's bracket wrapping, its
// checks (five letters, not guessed before, an English word) and its
// error allowance (one invalid move; a second in a row ends the game) are
// the same, and so are the four reward functions and their metrics:
// correct_answer, partial_answer (from the latest three-line feedback
// message), length_bonus and format_reward (XMLParser's, averaged over
// turns). Lab weights them 1, 1, 1, 0.2, a sum of at most 2.2; grpo
// divides each weight by 2.2 so that the reward lies in [0, 1] (Spec's
// RewardScale says so).
//
// Both: secrets come from a builtin list of common words (TextArena draws
// NLTK's basic-English nouns, which need NLTK's data), and guesses are
// checked against the hunspell en_GB and en_US lists TextArena bundles
// but not against NLTK's words corpus, which TextArena also accepts.

// wordleSystemPrompt is v0's system prompt (verifiers 8d4b33247).
const wordleSystemPrompt = "You are a competitive game player. Make sure you read the game instructions carefully, and always follow the required format.\n\nIn each turn, think step-by-step, then give your guess inside <guess>...</guess> tags."

// wordleSystemPromptV1 is v1's: verifiers a60a606's TextArena taskset
// SYSTEM_PROMPT.
const wordleSystemPromptV1 = "You are a competitive game player. Read the game instructions carefully and always use the exact move format the game requires. Think step-by-step first, then give your move as the only square-bracketed token in your reply — the game reads the first bracketed token, so don't put other words in brackets."

const (
	wordleLength = 5
	// wordleScale puts Lab's weighted sum (at most 1 + 1 + 0.2) into [0, 1].
	wordleScale = 1 / 2.2
)

func init() {
	env.MustRegister(env.Spec{
		ID: "wordle",
		Description: "multi-turn Wordle (TextArena Wordle-v0): guess a five-letter word with G/Y/X feedback; " +
			"v1 (default, verifiers a60a606): the first [word] of each reply, reward = game_reward; " +
			"v0 (verifiers 8d4b33247): <guess> tags, reward = (correct_answer + partial_answer + length_bonus + 0.2·format_reward) / 2.2",
		RewardScale: wordleScale,
		Versions: []env.Version{
			{Name: "v1", About: "verifiers a60a606 taskset", RewardScale: 1},
			{Name: "v0", Hub: []string{"0.1.7"}, About: "verifiers 8d4b33247"},
		},
		Args: []env.ArgSpec{
			{Name: "num_train_examples", Type: env.ArgInt, Default: 2000, Help: "training games"},
			{Name: "num_eval_examples", Type: env.ArgInt, Default: 20, Help: "eval games"},
			{Name: "system_prompt", Type: env.ArgString, Default: "", Help: `system message; "" = the version's (v1: the TextArena taskset's, v0: the <guess> one)`},
			{Name: "path_to_system_prompt", Type: env.ArgString, Default: "", Help: "file whose text is the system message (~ expanded), replacing system_prompt; \"\" = none"},
			{Name: "max_turns", Type: env.ArgInt, Default: -1, Help: "most assistant turns per game (-1 = until the game ends)"},
			{Name: "seed", Type: env.ArgInt, Default: 0, Help: "v1: seed of the first game (game i is seeded seed+i, as the taskset's); v0: seed of the secret stream"},
			{Name: "num_guesses", Type: env.ArgInt, Default: 6, Help: "guesses per game"},
			{Name: "words", Type: env.ArgList, Default: []any{}, Help: "secret words to draw from (five letters each); [] = builtin list"},
		},
		New: newWordle,
	})
}

type wordle struct {
	args  env.Args
	v1    bool
	words []string
	rb    *rubric.Rubric
}

func newWordle(a env.Args, o env.Options) (env.Environment, error) {
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
	v1 := o.Version != "v0"
	if v1 && a.Int("seed") < 0 {
		return nil, fmt.Errorf("seed = %d: v1 seeds game i with seed+i, as random.seed takes it; give a seed >= 0", a.Int("seed"))
	}
	if a.String("system_prompt") == "" {
		a = maps.Clone(a)
		a["system_prompt"] = wordleSystemPrompt
		if v1 {
			a["system_prompt"] = wordleSystemPromptV1
		}
	}
	if p := a.String("path_to_system_prompt"); p != "" {
		// verifiers' SystemMessage.from_path (v1: TasksetConfig.system_prompt,
		// read_text()): the file's text, unchanged.
		text, err := os.ReadFile(expandHome(p))
		if err != nil {
			return nil, fmt.Errorf("path_to_system_prompt: %v", err)
		}
		a = maps.Clone(a)
		a["system_prompt"] = string(text)
	}
	e := &wordle{args: a, words: words, v1: v1}
	var err error
	if e.v1 {
		e.rb = rubricV1(a.Int("num_guesses"))
	} else if e.rb, err = rubricV0(); err != nil {
		return nil, err
	}
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

// Examples draws secret words. v1: game i of either split is the
// taskset's task seed+i, its secret what random.seed(seed+i) then
// random.choice(words) gives (TextArena's reset), so both splits start
// at the same games, as an eval of the taskset does. v0: one stream from
// seed as TextArenaEnv's, the first num_train_examples for train and the
// next num_eval_examples for eval.
func (e *wordle) Examples(split string) ([]env.Example, error) {
	nTrain, nEval := max(e.args.Int("num_train_examples"), 0), max(e.args.Int("num_eval_examples"), 0)
	lo, hi := 0, nTrain
	switch split {
	case "train":
	case "eval":
		lo, hi = nTrain, nTrain+nEval
		if e.v1 {
			lo, hi = 0, nEval
		}
	default:
		return nil, env.SplitErr(e.ID(), split)
	}
	prompt := env.ChatPrompt(e.args.String("system_prompt"), e.gamePrompt())
	out := make([]env.Example, 0, hi-lo)
	if e.v1 {
		for i := lo; i < hi; i++ {
			seed := e.args.Int("seed") + i
			w := e.words[lab.NewPyRandom(uint64(seed)).Intn(len(e.words))] // random.seed(seed); random.choice(words)
			out = append(out, env.Example{ID: split + "-" + strconv.Itoa(i), Prompt: prompt, Answer: w, Info: map[string]any{"game": "Wordle-v0", "seed": seed}})
		}
		return out, nil
	}
	r := lab.NewRNG(e.args.Int("seed"), 0)
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

// wordleEpisodeV1 leaves the turn cap to the rollout, which stops after
// the capped turn's move has been played, as verifiers' limit does.
type wordleEpisodeV1 struct{ game *wordleGameV1 }

func (e *wordle) NewEpisode(ex env.Example) env.Episode {
	if e.v1 {
		return &wordleEpisodeV1{game: &wordleGameV1{secret: ex.Answer, maxGuesses: e.args.Int("num_guesses")}}
	}
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

// Respond plays the move; a game that ends sends nothing more.
func (ep *wordleEpisodeV1) Respond(_ context.Context, assistant string) ([]chat.Message, bool, error) {
	msg, over := ep.game.play(assistant)
	if over {
		return nil, true, nil
	}
	return []chat.Message{{Role: "user", Content: msg}}, false, nil
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
// so at most 2 × num_guesses turns; v1's max_turns (the agent's cap) may
// lower it.
func (e *wordle) MaxTurns() int {
	n := 2 * e.args.Int("num_guesses")
	if m := e.args.Int("max_turns"); e.v1 && m > 0 {
		n = min(n, m)
	}
	return n
}
