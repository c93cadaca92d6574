package env

// The multi-turn builtins say how many model turns an episode can take
// (TurnLimiter), so rollout sizes each KV cache slot for the whole
// conversation rather than for one turn: without it a 3-turn alphabet-sort
// filled its slot in turn 1 and trained on that turn alone.

// MaxTurns is max_turns: an episode plays its num_turns ≤ max_turns turns.
func (e *alphabetSort) MaxTurns() int { return e.args.Int("max_turns") }

// MaxTurns bounds a game: num_guesses valid guesses, each of which may
// follow one invalid move (a second invalid move in a row ends the game),
// so at most 2 × num_guesses turns.
func (e *wordle) MaxTurns() int { return 2 * e.args.Int("num_guesses") }
