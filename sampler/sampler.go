package sampler

import (
	"context"
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// Decoder turns token ids back into text; *tokenizer.Tokenizer is one. It
// is needed only for stop strings.
type Decoder interface {
	Decode(ids []int32) string
}

// Config sizes a Sampler.
type Config struct {
	// Slots is how many sequences the KV cache holds at once.
	Slots int
	// MaxLen is the most tokens one sequence may hold: prompt, generated
	// and appended together (the total cap of a multi-turn rollout).
	MaxLen int
	// PrefillTokens bounds the tokens of one Forward call, so a large
	// prefill is split into chunks; 0 means 2048. It must be at least Slots
	// so that one decode step of every sequence fits in one call.
	PrefillTokens int
	// RecordExperts keeps, for a mixture-of-experts model, the experts
	// each token was routed to (Seq.Experts), for routing replay.
	RecordExperts bool
}

// cacheLenSource says where a sequence's cache length comes from, for
// messages that must name a setting a user can change: max_len is the
// sampler's own field, which nobody sets by hand.
const cacheLenSource = "rollouts size it as prompt + [sampling] max_tokens per turn, capped at the model's max_position_embeddings"

// Sampler generates for many sequences at once over one model and one KV
// cache. It is used by one goroutine at a time.
type Sampler struct {
	m     *model.Model
	dec   Decoder
	cfg   Config
	cache *model.KVCache
	free  []int // free slots, used as a stack
	// host staging of one decode step's Sample call, reused across steps
	u      []float64
	params []kernels.SampleParams
	toks   []int32
	lps    []float32
	row    []float32 // one logits row, for top log-probs
	batchState
}

// New allocates a sampler and its KV cache. dec may be nil when no
// sequence uses stop strings.
func New(m *model.Model, dec Decoder, cfg Config) (*Sampler, error) {
	if cfg.PrefillTokens == 0 {
		cfg.PrefillTokens = max(2048, cfg.Slots)
	}
	switch {
	case cfg.Slots < 1:
		return nil, fmt.Errorf("sampler: slots = %d: want at least 1 sequence", cfg.Slots)
	case cfg.MaxLen < 2:
		return nil, fmt.Errorf("sampler: max_len = %d: want at least 2 tokens (a prompt and one generated token)", cfg.MaxLen)
	case cfg.PrefillTokens < cfg.Slots:
		return nil, fmt.Errorf("sampler: prefill_tokens = %d is below slots = %d; one decode step of every sequence must fit in one forward call", cfg.PrefillTokens, cfg.Slots)
	}
	s := &Sampler{m: m, dec: dec, cfg: cfg, cache: m.NewKVCache(cfg.Slots, cfg.MaxLen)}
	for i := cfg.Slots - 1; i >= 0; i-- {
		s.free = append(s.free, i)
	}
	return s, nil
}

// Config returns the sampler's sizes (defaults filled in).
func (s *Sampler) Config() Config { return s.cfg }

// Model is the model the sampler generates with.
func (s *Sampler) Model() *model.Model { return s.m }

// FreeSlots is how many more sequences Start can take.
func (s *Sampler) FreeSlots() int { return len(s.free) }

// SetAdapter makes later steps run the base model with ad applied (nil
// for the bare base model). Every slot must be free: a sequence's cached
// keys and values were computed under the adapter it started with, so a
// change under it would mix two models in one sequence.
func (s *Sampler) SetAdapter(ad model.Adapter) error {
	if held := s.cfg.Slots - len(s.free); held > 0 {
		return fmt.Errorf("sampler: cannot change the adapter while %d sequences hold cache slots", held)
	}
	s.m = s.m.WithAdapter(ad)
	return nil
}

// Close frees the KV cache; the sampler cannot be used afterwards.
func (s *Sampler) Close() {
	if s.cache != nil {
		s.cache.Free()
		s.cache = nil
	}
}

// Start takes a free slot for a new sequence beginning with prompt. Its
// tokens are prefilled by the next Run.
func (s *Sampler) Start(prompt []int32, p Params) (*Seq, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(p.Stop) > 0 && s.dec == nil {
		return nil, fmt.Errorf("stop strings %q need a sampler built with a Decoder (the tokenizer)", p.Stop)
	}
	switch {
	case s.cache == nil:
		return nil, fmt.Errorf("sampler is closed")
	case len(prompt) == 0:
		return nil, fmt.Errorf("empty prompt: a sequence needs at least one token to condition on")
	case len(prompt) >= s.cfg.MaxLen:
		return nil, fmt.Errorf("prompt of %d tokens leaves no room in the cache length %d (%s); shorten the prompt (the system prompt or the example's text)", len(prompt), s.cfg.MaxLen, cacheLenSource)
	case len(s.free) == 0:
		return nil, fmt.Errorf("all %d cache slots hold sequences; Release finished ones or raise slots", s.cfg.Slots)
	}
	v := s.m.Config.VocabSize
	for i, t := range prompt {
		if t < 0 || int(t) >= v {
			return nil, fmt.Errorf("prompt token %d (index %d) is outside the model's vocabulary of %d", t, i, v)
		}
	}
	slot := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	q := &Seq{s: s, slot: slot, params: p, tokens: append([]int32(nil), prompt...)}
	q.params.Stop = append([]string(nil), p.Stop...)
	q.params.StopTokens = append([]int32(nil), p.StopTokens...)
	q.rng = seqStream(p.Seed)
	for _, st := range p.Stop {
		q.stopMax = max(q.stopMax, len(st))
	}
	return q, nil
}

// Release returns the sequence's slot; the sequence cannot run again.
func (s *Sampler) Release(q *Seq) {
	if q == nil || q.s != s || q.slot < 0 {
		return
	}
	s.free = append(s.free, q.slot)
	q.slot = -1
}

// Run generates one turn for each sequence: their pending tokens (the
// prompt, or the last sampled token plus anything appended) are prefilled
// in packed batches of at most PrefillTokens tokens, then every live
// sequence advances one token per Forward call until its turn ends (stop
// token, stop string, MaxTokens, or a full slot). Each sequence's result
// is in its Turn. Run returns early with ctx's error when it is cancelled
// (checked between Forward calls) and with the backend's error if a
// Forward fails; the sequences are then in an unspecified state and should
// be released. Run is Begin on each sequence, then Step until every turn
// is Done.
func (s *Sampler) Run(ctx context.Context, seqs []*Seq) error {
	seen := make(map[*Seq]bool, len(seqs))
	for i, q := range seqs {
		if err := s.owns(q); err != nil {
			return fmt.Errorf("sequence %d %v", i, err)
		}
		if seen[q] {
			return fmt.Errorf("sequence %d is listed twice", i)
		}
		seen[q] = true
	}
	live := make([]*Seq, 0, len(seqs))
	for _, q := range seqs {
		q.beginTurn()
		if !q.done {
			live = append(live, q)
		}
	}
	for len(live) > 0 {
		if err := s.step(ctx, live); err != nil {
			return err
		}
		next := live[:0]
		for _, q := range live {
			if !q.done {
				next = append(next, q)
			}
		}
		live = next
	}
	return nil
}

// Generate samples one turn for each prompt with its params and returns
// the turns in order. It runs the prompts in waves of at most FreeSlots
// sequences and releases every slot it took.
func (s *Sampler) Generate(ctx context.Context, prompts [][]int32, params []Params) ([]Turn, error) {
	if len(params) != len(prompts) {
		return nil, fmt.Errorf("%d prompts but %d params", len(prompts), len(params))
	}
	out := make([]Turn, len(prompts))
	for lo := 0; lo < len(prompts); {
		n := min(len(s.free), len(prompts)-lo)
		if n == 0 {
			return nil, fmt.Errorf("all %d cache slots hold sequences; Release them before Generate", s.cfg.Slots)
		}
		seqs := make([]*Seq, 0, n)
		release := func() {
			for _, q := range seqs {
				s.Release(q)
			}
		}
		for i := lo; i < lo+n; i++ {
			q, err := s.Start(prompts[i], params[i])
			if err != nil {
				release()
				return nil, fmt.Errorf("prompt %d: %w", i, err)
			}
			seqs = append(seqs, q)
		}
		err := s.Run(ctx, seqs)
		for i, q := range seqs {
			out[lo+i] = q.Turn
		}
		release()
		if err != nil {
			return nil, err
		}
		lo += n
	}
	return out, nil
}
