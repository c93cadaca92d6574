package sampler

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Finish reasons, as OpenAI-compatible servers report them.
const (
	FinishStop   = "stop"   // a stop token or stop string ended the turn
	FinishLength = "length" // MaxTokens, or the sequence filled its cache slot
)

// Turn is what one Run generated for a sequence.
type Turn struct {
	// Tokens are the sampled ids, the stop token (if any) included.
	Tokens []int32
	// Logprobs[i] is log p(Tokens[i]) under the model's raw distribution
	// (temperature 1, no truncation), as model.TokenLogprobs computes it.
	Logprobs []float32
	// TopLogprobs[i], kept only when Params.TopLogprobs > 0, are the most
	// likely tokens at Tokens[i]'s position under the same raw
	// distribution, most likely first.
	TopLogprobs [][]TokenLogprob
	// FinishReason is FinishStop or FinishLength.
	FinishReason string
	// StopToken is true when the turn's last token is one of StopTokens.
	StopToken bool
	// StopString is the stop string that ended the turn ("" if none).
	StopString string
	// CacheFull is true when the turn ended because the sequence reached
	// the sampler's MaxLen; no later turn can generate anything.
	CacheFull bool
}

// Seq is one sequence held in a cache slot: its tokens so far (prompt,
// generated and appended) and its random stream. Create with Start; free
// the slot with Release.
type Seq struct {
	s      *Sampler
	slot   int // -1 once released
	params Params
	rng    *rand.Rand
	tokens []int32
	cached int    // tokens[:cached] have their keys and values in the cache
	mark   uint64 // the last Step that listed it
	// experts is the routing of tokens[:cached] when the sampler records
	// it (routing.go).
	experts []int32
	// stepMark is the last step (step, not Step) that ran it.
	stepMark uint64
	// group is the StartGroup group it shares its prompt with (nil: none);
	// awaitsFork is set until it has forked the group's prompt or taken to
	// prefilling it itself.
	group      *group
	awaitsFork bool
	own        int // cache blocks reserved for it (its group's shared ones aside)
	// Turn is the result of the latest Run that included this sequence.
	Turn Turn
	// turn state
	text    []byte // decoded text of the turn, kept only with stop strings
	done    bool
	stopMax int // longest stop string in bytes
}

// Tokens returns the sequence's tokens so far; the caller must not modify
// them.
func (q *Seq) Tokens() []int32 { return q.tokens }

// Len is the number of tokens in the sequence.
func (q *Seq) Len() int { return len(q.tokens) }

// Params returns the sequence's sampling parameters.
func (q *Seq) Params() Params { return q.params }

// Room is how many more tokens the sequence can hold before its slot is
// full.
func (q *Seq) Room() int { return q.s.cfg.MaxLen - len(q.tokens) }

// Append adds tokens that the model did not generate (an environment's
// reply); the next Run prefills them and continues after them. It fails,
// appending nothing, when they do not fit in the slot or are outside the
// vocabulary.
func (q *Seq) Append(tokens ...int32) error {
	if q.slot < 0 {
		return fmt.Errorf("append to a released sequence")
	}
	if len(tokens) > q.Room() {
		return fmt.Errorf("appending %d tokens to a sequence of %d exceeds the cache length %d (%s); shorten the environment's replies", len(tokens), len(q.tokens), q.s.cfg.MaxLen, cacheLenSource)
	}
	v := q.s.m.Config.VocabSize
	for i, t := range tokens {
		if t < 0 || int(t) >= v {
			return fmt.Errorf("appended token %d (index %d) is outside the model's vocabulary of %d", t, i, v)
		}
	}
	q.tokens = append(q.tokens, tokens...)
	return nil
}

// beginTurn resets the per-turn state before a Run.
func (q *Seq) beginTurn() {
	q.Turn = Turn{}
	q.text = q.text[:0]
	q.done = false
	if q.Room() <= 0 {
		q.finish(FinishLength)
		q.Turn.CacheFull = true
	}
}

func (q *Seq) finish(reason string) {
	q.Turn.FinishReason = reason
	q.done = true
}

// accept records a sampled token and decides whether the turn is over:
// stop token, then stop string, then the per-turn cap, then the slot.
func (q *Seq) accept(tok int32, lp float64, dec Decoder) {
	q.tokens = append(q.tokens, tok)
	q.Turn.Tokens = append(q.Turn.Tokens, tok)
	q.Turn.Logprobs = append(q.Turn.Logprobs, float32(lp))
	for _, st := range q.params.StopTokens {
		if tok == st {
			q.Turn.StopToken = true
			q.finish(FinishStop)
			return
		}
	}
	if len(q.params.Stop) > 0 {
		from := max(0, len(q.text)-q.stopMax+1)
		q.text = append(q.text, dec.Decode([]int32{tok})...)
		tail := string(q.text[from:])
		for _, s := range q.params.Stop {
			if strings.Contains(tail, s) {
				q.Turn.StopString = s
				q.finish(FinishStop)
				return
			}
		}
	}
	if q.params.MaxTokens > 0 && len(q.Turn.Tokens) >= q.params.MaxTokens {
		q.finish(FinishLength)
		return
	}
	if q.Room() <= 0 {
		q.finish(FinishLength)
		q.Turn.CacheFull = true
	}
}
