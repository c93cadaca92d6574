package env

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/rubric"
)

// wordle follows Prime Intellect's wordle environment (TextArena's
// Wordle-v0 behind verifiers' TextArenaEnv): the same system prompt, game
// prompt, "[word]" guesses inside <guess> tags, G/Y/X feedback (greens
// first, then yellows left to right, so repeated letters are marked as in
// the real game), and the four reward functions correct_answer,
// partial_answer, length_bonus and format_reward. Prime weights them
// 1, 1, 1, 0.2, which sums to at most 2.2; here each weight is divided by
// 2.2 so the reward lies in [0, 1] with the same ordering. Differences:
// secret words come from a builtin list of common words (TextArena uses
// NLTK's), and any five-letter guess is accepted (TextArena also checks a
// dictionary). The rewards replay the game from the assistant's turns,
// so they do not depend on how the driver records the final message.

const wordleSystemPrompt = "You are a competitive game player. Make sure you read the game instructions carefully, and always follow the required format.\n\nIn each turn, think step-by-step, then give your guess inside <guess>...</guess> tags."

const wordleLength = 5

func init() {
	mustRegister(Spec{
		ID:          "wordle",
		Description: "multi-turn Wordle: guess a five-letter word with G/Y/X feedback; reward for solving, fewer guesses, greens and yellows",
		Args: []ArgSpec{
			{Name: "num_train_examples", Type: ArgInt, Default: 2000, Help: "training games"},
			{Name: "num_eval_examples", Type: ArgInt, Default: 20, Help: "eval games"},
			{Name: "system_prompt", Type: ArgString, Default: wordleSystemPrompt, Help: "system message"},
			{Name: "seed", Type: ArgInt, Default: 0, Help: "seed for drawing secret words"},
			{Name: "num_guesses", Type: ArgInt, Default: 6, Help: "guesses per game"},
			{Name: "words", Type: ArgList, Default: []any{}, Help: "secret words to draw from (five letters each); [] = builtin list"},
		},
		New: newWordle,
	})
}

type wordle struct {
	args  Args
	words []string
	rb    *rubric.Rubric
}

func newWordle(a Args) (Environment, error) {
	if a.Int("num_guesses") < 1 {
		return nil, fmt.Errorf("num_guesses must be at least 1, got %d", a.Int("num_guesses"))
	}
	words := wordleWords
	if custom := a.List("words"); len(custom) > 0 {
		words = nil
		for _, w := range custom {
			s, ok := w.(string)
			if !ok || !isWordleWord(strings.ToLower(s)) {
				return nil, fmt.Errorf("words: %v is not a five-letter word of a-z", formatValue(w))
			}
			words = append(words, strings.ToLower(s))
		}
	}
	e := &wordle{args: a, words: words}
	e.rb = mustRubric(
		rubric.Term{Name: "correct_answer", Weight: 1 / 2.2, Func: rubric.Reward(wordleCorrect)},
		rubric.Term{Name: "partial_answer", Weight: 1 / 2.2, Func: rubric.Reward(wordlePartial)},
		rubric.Term{Name: "length_bonus", Weight: 1 / 2.2, Func: rubric.Reward(wordleLengthBonus)},
		rubric.Term{Name: "format_reward", Weight: 0.2 / 2.2, Func: mustFormat("guess")},
	)
	return e, nil
}

func mustFormat(tags ...string) rubric.Func {
	f, err := rubric.FormatReward(tags...)
	if err != nil {
		panic(err)
	}
	return f
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

func (e *wordle) gamePrompt() string {
	n := e.args.Int("num_guesses")
	return fmt.Sprintf("[GAME] You are Player 0 in Wordle.\nA secret %d-letter word has been chosen. You have %d attempts to guess it.\n"+
		"For each guess, wrap your word in square brackets (e.g., '[apple]').\n"+
		"Feedback for each letter will be given as follows:\n"+
		"  - G (green): correct letter in the correct position\n"+
		"  - Y (yellow): letter exists in the word but in the wrong position\n"+
		"  - X (wrong): letter is not in the word\n"+
		"Enter your guess to begin.", wordleLength, n)
}

// Examples draws secret words as TextArenaEnv does: one stream from seed,
// the first num_train_examples for train and the next num_eval_examples
// for eval.
func (e *wordle) Examples(split string) ([]Example, error) {
	nTrain, nEval := max(e.args.Int("num_train_examples"), 0), max(e.args.Int("num_eval_examples"), 0)
	lo, hi := 0, nTrain
	switch split {
	case "train":
	case "eval":
		lo, hi = nTrain, nTrain+nEval
	default:
		return nil, splitError(e.ID(), split)
	}
	r := newRNG(e.args.Int("seed"), 0)
	prompt := chatPrompt(e.args.String("system_prompt"), e.gamePrompt())
	out := make([]Example, 0, hi-lo)
	for i := 0; i < hi; i++ {
		w := pick(r, e.words)
		if i >= lo {
			out = append(out, Example{ID: split + "-" + strconv.Itoa(i-lo), Prompt: prompt, Answer: w})
		}
	}
	return out, nil
}

var bracketGuess = regexp.MustCompile(`\[(\w+)\]`)

// wordleFeedback marks each letter of guess against secret: G where it
// matches, then, left to right, Y while the secret has unmatched copies of
// the letter left, else X.
func wordleFeedback(secret, guess string) []byte {
	fb := make([]byte, len(guess))
	left := map[byte]int{}
	for i := 0; i < len(guess); i++ {
		if guess[i] == secret[i] {
			fb[i] = 'G'
		} else {
			left[secret[i]]++
		}
	}
	for i := 0; i < len(guess); i++ {
		if fb[i] == 'G' {
			continue
		}
		if left[guess[i]] > 0 {
			fb[i] = 'Y'
			left[guess[i]]--
		} else {
			fb[i] = 'X'
		}
	}
	return fb
}

// wordleGame is the state of one game: the secret, the valid guesses with
// their feedback, and a count of consecutive invalid moves.
type wordleGame struct {
	secret     string
	maxGuesses int
	guesses    []string
	feedback   [][]byte
	invalid    int
	solved     bool
}

// play applies one assistant turn and returns the environment's message
// and whether the game is over. A turn without a valid "[word]" guess is
// an invalid move: it uses no guess, and two in a row end the game.
func (g *wordleGame) play(turn string) (string, bool) {
	// Like verifiers, only a <guess> is read; a turn without one is an
	// invalid move.
	guessText, _ := rubric.XMLTag(turn, "guess")
	reason := ""
	m := bracketGuess.FindStringSubmatch(guessText)
	var word string
	switch {
	case m == nil:
		reason = "You tried submitting a word in the wrong format. Please make sure to use squared brackets."
	default:
		word = strings.ToLower(m[1])
		switch {
		case len(word) != wordleLength || !isWordleWord(word):
			reason = fmt.Sprintf("Your word must be exactly %d letters.", wordleLength)
		case contains(g.guesses, word):
			reason = fmt.Sprintf("You have already guessed '%s' before. Please try a different word.", word)
		}
	}
	if reason != "" {
		g.invalid++
		if g.invalid >= 2 {
			return "Invalid move: " + reason + " The game is over.", true
		}
		return "Invalid move: " + reason + " Please resubmit a valid move and remember to follow the game rules to avoid penalties.", false
	}
	g.invalid = 0
	fb := wordleFeedback(g.secret, word)
	g.guesses = append(g.guesses, word)
	g.feedback = append(g.feedback, fb)
	if word == g.secret {
		g.solved = true
		return "Congratulations! You guessed the word correctly!", true
	}
	left := g.maxGuesses - len(g.guesses)
	if left <= 0 {
		return fmt.Sprintf("The turn limit has been reached. You didn't guess the word.\nThe secret word was: **%s**.", g.secret), true
	}
	spaced := func(s string) string { return strings.Join(strings.Split(s, ""), " ") }
	return fmt.Sprintf("%s\n%s\nYou have %d guesses left.", spaced(strings.ToUpper(word)), spaced(string(fb)), left), false
}

type wordleEpisode struct{ game *wordleGame }

func (e *wordle) NewEpisode(ex Example) Episode {
	return &wordleEpisode{&wordleGame{secret: ex.Answer, maxGuesses: e.args.Int("num_guesses")}}
}

func (ep *wordleEpisode) Respond(_ context.Context, assistant string) ([]chat.Message, bool, error) {
	msg, done := ep.game.play(assistant)
	return []chat.Message{{Role: "user", Content: msg}}, done, nil
}

// wordleCorrect is Prime's correct_answer: the last <guess> given is
// exactly "[secret]".
func wordleCorrect(r rubric.Rollout) float64 {
	guess, _ := parseLast(r, func(t string) (string, bool) { return rubric.XMLTag(t, "guess") })
	if guess == "["+r.Answer+"]" {
		return 1
	}
	return 0
}

// wordlePartial is Prime's partial_answer: when not solved, 0.2 per green
// and 0.1 per yellow of the latest feedback.
func wordlePartial(r rubric.Rollout) float64 {
	if wordleCorrect(r) == 1 {
		return 0
	}
	g := &wordleGame{secret: r.Answer, maxGuesses: len(r.AssistantTurns()) + 1}
	for _, t := range r.AssistantTurns() {
		if _, over := g.play(t); over {
			break
		}
	}
	if len(g.feedback) == 0 {
		return 0
	}
	last := string(g.feedback[len(g.feedback)-1])
	return 0.2*float64(strings.Count(last, "G")) + 0.1*float64(strings.Count(last, "Y"))
}

var guessLine = regexp.MustCompile(`<guess>.*</guess>`)

// wordleLengthBonus is Prime's length_bonus: correct / number of turns
// that made a guess.
func wordleLengthBonus(r rubric.Rollout) float64 {
	n := 0
	for _, t := range r.AssistantTurns() {
		if guessLine.MatchString(t) {
			n++
		}
	}
	return wordleCorrect(r) / float64(max(n, 1))
}
