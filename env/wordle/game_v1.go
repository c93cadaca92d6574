package wordle

import (
	"fmt"
	"strings"

	"github.com/grpo-dev/grpo/rubric"
)

// wordleGameV1 is one game as verifiers a60a606's TextArenaEnv.run plays
// TextArena's Wordle-v0 (textarena 0.7.4): the whole reply, stripped
// (Segment.last_reply), is the move; ActionFormattingWrapper brackets a
// reply with no bracket at all, so a bare word is a guess; the game reads
// the first [word] anywhere in it. The user turn after a move is the
// latest game message (_latest_feedback): the marks and guesses left, or
// the invalid-move warning. A win, the last guess, or a second invalid
// move in a row ends the game with TextArena's reward; no reply follows.
type wordleGameV1 struct {
	secret     string
	maxGuesses int
	guesses    []string
	last       []byte // the marks of the latest valid guess
	lastFailed bool
	over       bool
	reward     float64
}

// play takes one assistant reply and returns the user turn that follows
// ("" once the game is over) and whether the game is over.
func (g *wordleGameV1) play(reply string) (string, bool) {
	action := rubric.PyStrip(reply)
	if !strings.ContainsAny(action, "[]") {
		action = "[" + action + "]"
	}
	word, reason := g.check(action)
	if reason != "" {
		if g.lastFailed {
			// SinglePlayerState.set_invalid_move past its allowance: the
			// reward is the completion of the latest valid guess.
			g.over, g.reward = true, g.completion()
			return "", true
		}
		g.lastFailed = true
		return "You attempted an invalid move. Reason: " + reason + " Please resubmit a valid move and remember to follow the game rules to avoid penalties.", false
	}
	g.lastFailed = false
	g.last = wordleFeedback(g.secret, word)
	g.guesses = append(g.guesses, word)
	switch {
	case word == g.secret:
		g.over, g.reward = true, 1
	case len(g.guesses) >= g.maxGuesses:
		g.over, g.reward = true, g.completion()
	}
	if g.over {
		return "", true
	}
	return fmt.Sprintf("%s\n%s\nYou have %d guesses left.", spaced(strings.ToUpper(word)), spaced(string(g.last)), g.maxGuesses-len(g.guesses)), false
}

// check is WordleEnv.step's validation, which v0's game shares.
func (g *wordleGameV1) check(action string) (string, string) {
	v0 := wordleGame{guesses: g.guesses}
	return v0.check(action)
}

// completion is WordleEnv._get_percentage_completion: (greens + ½·yellows)
// / 5 of the latest valid guess, 0 before any.
func (g *wordleGameV1) completion() float64 {
	if g.last == nil {
		return 0
	}
	s := string(g.last)
	return (float64(strings.Count(s, "G")) + 0.5*float64(strings.Count(s, "Y"))) / wordleLength
}

// gameRewardV1 is the game_reward TextArenaEnv.run records: the game's
// reward when the replies ended it, 0 when the rollout was cut off first
// (turn cap, context, or a reply without a move before the end). It
// replays the assistant turns, so a saved transcript scores as the live
// game did.
func gameRewardV1(r rubric.Rollout, maxGuesses int) float64 {
	g := &wordleGameV1{secret: r.Answer, maxGuesses: maxGuesses}
	for _, turn := range r.AssistantTurns() {
		if _, over := g.play(turn); over {
			return g.reward
		}
	}
	return 0
}
