package wordle

import (
	_ "embed"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/grpo-dev/grpo/rubric"
)

// wordleDictionary holds the five-letter words TextArena's Wordle accepts
// as guesses from the hunspell en_GB and en_US lists it bundles, expanded
// by its own affix code (env/testdata/reference/wordle_dictionary.py).
//
//go:embed dictionary.txt
var wordleDictionaryText string

var wordleDictionary = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(wordleDictionaryText) {
		m[w] = true
	}
	return m
}()

// wordleGame is TextArena's Wordle-v0 state for one game: the secret, the
// valid guesses with their feedback, whether the last move was invalid, and
// the assistant turns so far (the guess is read from them as verifiers
// reads it from the conversation).
type wordleGame struct {
	secret     string
	maxGuesses int
	turns      []string
	guesses    []string
	feedback   [][]byte
	lastFailed bool
}

// bracketWord is TextArena's r"\[(\w+)\]"; Python's \w is Unicode-aware.
var bracketWord = regexp.MustCompile(`\[([\p{L}\p{N}_]+)\]`)

// play takes one assistant turn and returns the game's reply as
// TextArenaEnv sends it, and whether the game is over.
func (g *wordleGame) play(turn string) (string, bool) {
	g.turns = append(g.turns, turn)
	action := "None" // str(None): no turn so far had a <guess>
	if guess, ok := latestGuess(g.turns); ok {
		action = guess
	}
	if !strings.ContainsAny(action, "[]") {
		action = "[" + action + "]" // TextArena's ActionFormattingWrapper
	}
	word, reason := g.check(action)
	if reason != "" {
		if g.lastFailed {
			return "Invalid Move: " + reason, true
		}
		g.lastFailed = true
		return "You attempted an invalid move. Reason: " + reason + " Please resubmit a valid move and remember to follow the game rules to avoid penalties.", false
	}
	g.lastFailed = false
	fb := wordleFeedback(g.secret, word)
	g.guesses = append(g.guesses, word)
	g.feedback = append(g.feedback, fb)
	if word == g.secret {
		return "Congratulations! You guessed the word correctly!", true
	}
	if len(g.guesses) >= g.maxGuesses {
		greens, yellows := strings.Count(string(fb), "G"), strings.Count(string(fb), "Y")
		pct := (float64(greens) + 0.5*float64(yellows)) / wordleLength
		return fmt.Sprintf("The turn limit has been reached. You didn't guess the word, but your best guess matched %d%% of the letters in the correct positions.\nThe secret word was: **%s**.",
			int(math.Round(pct*100)), g.secret), true
	}
	// wordle_feedback_fn keeps what follows "Feedback:", newline included.
	return fmt.Sprintf("\n%s\n%s\nYou have %d guesses left.", spaced(strings.ToUpper(word)), spaced(string(fb)), g.maxGuesses-len(g.guesses)), false
}

// check validates an action as TextArena's WordleEnv.step does and returns
// the lower-cased word or the reason it is invalid.
func (g *wordleGame) check(action string) (string, string) {
	m := bracketWord.FindStringSubmatch(action)
	if m == nil {
		return "", "You tried submitting a word in the wrong format. Please make sure to use squared brackets."
	}
	word := strings.ToLower(m[1])
	switch {
	case len([]rune(word)) != wordleLength:
		return "", fmt.Sprintf("Your word must be exactly %d letters.", wordleLength)
	case slices.Contains(g.guesses, word):
		return "", fmt.Sprintf("You have already guessed '%s' before. Please try a different word.", word)
	case !wordleDictionary[word]:
		return "", fmt.Sprintf("'%s' is not an English word.", word)
	}
	return word, ""
}

// latestGuess is XMLParser(["guess"]).parse_answer over the turns: the
// first <guess> of the latest turn that has one.
func latestGuess(turns []string) (string, bool) {
	for i := len(turns) - 1; i >= 0; i-- {
		if g, ok := rubric.XMLTag(turns[i], "guess"); ok {
			return g, true
		}
	}
	return "", false
}

func spaced(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

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
