package sampler

import (
	"context"
	"fmt"
	"slices"

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
	// BlockSize is the tokens per KV-cache block; 0 means 16.
	BlockSize int
	// Blocks is the size of the KV-cache pool in blocks; 0 means enough
	// for every slot to hold MaxLen tokens of its own. With fewer, Start
	// admits only the sequences whose worst case (MaxLen tokens, the
	// shared prompt counted once per group) the free blocks can hold:
	// CanStart says whether a group fits, and the caller queues the rest.
	Blocks int
	// NoPrefixSharing makes StartGroup start each sequence on its own, so
	// each prefills the prompt itself: the path before prefix sharing,
	// kept for comparisons (benchmarks, tests).
	NoPrefixSharing bool
	// NoSharedPrefixAttention makes the static decode step read each
	// sequence's whole context itself, shared prompt blocks included,
	// instead of once per group (model.Decoder.SetSharedPrefixAttention),
	// to compare the two.
	NoSharedPrefixAttention bool
}

// DefaultBlockSize is the KV-cache block size when Config.BlockSize is 0.
const DefaultBlockSize = 16

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
	// reserved is the blocks promised to the sequences started: each
	// sequence's own worst case plus each group's shared prompt blocks.
	reserved int
	stats    Stats
	// host staging of one decode step's Sample call, reused across steps
	u      []float64
	params []kernels.SampleParams
	toks   []int32
	lps    []float32
	row    []float32 // one logits row, for top log-probs
	batchState
	static staticState // the static decode path (static.go)
}

// New allocates a sampler and its KV cache. dec may be nil when no
// sequence uses stop strings.
func New(m *model.Model, dec Decoder, cfg Config) (*Sampler, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// On a backend with graphs the cache holds one slot and one block
	// more than cfg asks for: the static decode step's padding slot
	// (static.go), which no sequence takes and no reservation counts, so
	// every step can be padded to its bucket even with every slot taken
	// and the pool reserved in full.
	pad := 0
	if _, ok := m.Backend.(kernels.Graphs); ok {
		pad = 1
	}
	cache, err := m.NewPagedKVCacheWindowed(cfg.Slots+pad, cfg.MaxLen, cfg.BlockSize, cfg.Blocks+pad, windowBlocks(m, cfg, pad))
	if err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	s := &Sampler{m: m, dec: dec, cfg: cfg, cache: cache}
	s.static.pad = -1
	if pad > 0 {
		s.static.pad = cache.Slots - 1
	}
	s.freeAllSlots()
	return s, nil
}

// windowBlocks is WindowBlocks for cfg (its defaults filled in).
func windowBlocks(m *model.Model, cfg Config, pad int) int {
	return WindowBlocks(m.Config, cfg.Slots, cfg.MaxLen, cfg.BlockSize, cfg.Blocks, cfg.PrefillTokens, pad)
}

// withDefaults checks cfg and fills in its defaults, as New sizes a cache.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.PrefillTokens == 0 {
		cfg.PrefillTokens = max(2048, cfg.Slots)
	}
	switch {
	case cfg.Slots < 1:
		return cfg, fmt.Errorf("sampler: slots = %d: want at least 1 sequence", cfg.Slots)
	case cfg.MaxLen < 2:
		return cfg, fmt.Errorf("sampler: max_len = %d: want at least 2 tokens (a prompt and one generated token)", cfg.MaxLen)
	case cfg.PrefillTokens < cfg.Slots:
		return cfg, fmt.Errorf("sampler: prefill_tokens = %d is below slots = %d; one decode step of every sequence must fit in one forward call", cfg.PrefillTokens, cfg.Slots)
	case cfg.BlockSize < 0 || cfg.Blocks < 0:
		return cfg, fmt.Errorf("sampler: block_size = %d, blocks = %d: want positive values, or 0 for the defaults", cfg.BlockSize, cfg.Blocks)
	}
	if cfg.BlockSize == 0 {
		cfg.BlockSize = DefaultBlockSize
	}
	perSeq := seqBlocks(cfg.MaxLen, cfg.BlockSize)
	if cfg.Blocks == 0 {
		cfg.Blocks = cfg.Slots * perSeq
	}
	if cfg.Blocks < perSeq {
		return cfg, fmt.Errorf("sampler: blocks = %d of %d tokens cannot hold one sequence of max_len %d (%d blocks); give the cache more memory or lower max_tokens",
			cfg.Blocks, cfg.BlockSize, cfg.MaxLen, perSeq)
	}
	return cfg, nil
}

// freeAllSlots makes every slot of cfg free, the lowest taken first.
func (s *Sampler) freeAllSlots() {
	s.free = s.free[:0]
	for i := s.cfg.Slots - 1; i >= 0; i-- {
		s.free = append(s.free, i)
	}
}

// Config returns the sampler's sizes (defaults filled in).
func (s *Sampler) Config() Config { return s.cfg }

// Model is the model the sampler generates with.
func (s *Sampler) Model() *model.Model { return s.m }

// FreeSlots is how many more sequences Start could take by slots alone;
// CanStart also counts the cache's blocks.
func (s *Sampler) FreeSlots() int { return len(s.free) }

// Cache is the sampler's KV cache, for inspection (tests, counters). On a
// backend with graphs it holds the padding slot and block beside the
// Config's (Capacity).
func (s *Sampler) Cache() *model.KVCache { return s.cache }

// SetAdapter makes later steps run the base model with ad applied (nil
// for the bare base model). Every slot must be free: a sequence's cached
// keys and values were computed under the adapter it started with, so a
// change under it would mix two models in one sequence.
func (s *Sampler) SetAdapter(ad model.Adapter) error {
	if held := s.cfg.Slots - len(s.free); held > 0 {
		return fmt.Errorf("sampler: cannot change the adapter while %d sequences hold cache slots", held)
	}
	s.m = s.m.WithAdapter(ad)
	s.freeStatic() // its graphs read the old adapter's buffers
	return nil
}

// Close frees the KV cache; the sampler cannot be used afterwards.
func (s *Sampler) Close() {
	s.freeStatic()
	if s.cache != nil {
		s.cache.Free()
		s.cache = nil
	}
}

// Start takes a free slot for a new sequence beginning with prompt. Its
// tokens are prefilled by the next Run. It is StartGroup with one
// sequence.
func (s *Sampler) Start(prompt []int32, p Params) (*Seq, error) {
	qs, err := s.StartGroup(prompt, []Params{p})
	if err != nil {
		return nil, err
	}
	return qs[0], nil
}

// Release returns the sequence's slot and its cache blocks (those it
// shares stay with the sequences still holding them); the sequence cannot
// run again.
func (s *Sampler) Release(q *Seq) {
	if q == nil || q.s != s || q.slot < 0 {
		return
	}
	s.cache.Release(q.slot)
	s.free = append(s.free, q.slot)
	s.reserved -= q.own
	q.slot, q.own = -1, 0
	if g := q.group; g != nil {
		g.leave(q)
		if len(g.members) == 0 {
			s.reserved -= g.shared
		}
		q.group = nil
	}
	if len(s.free) == s.cfg.Slots {
		s.dropPad() // with every sequence released the pool is whole again
	}
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
// is Done. Under expert parallelism every rank calls Run together, each
// with its own sequences (none for a rank with nothing to run), and Run
// returns once every rank's are done (lockstep.go).
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
	if coll := s.expertParallel(); coll != nil {
		return s.runLockstep(ctx, coll, live) // every rank in step (lockstep.go)
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
// the turns in order. Consecutive equal prompts start as one group
// (StartGroup: prefilled once); groups start in order while CanStart
// admits them, run together, and are released before the next wave.
// Under expert parallelism every rank calls Generate with its own
// prompts (none included), and the ranks run in step (lockstep.go).
func (s *Sampler) Generate(ctx context.Context, prompts [][]int32, params []Params) ([]Turn, error) {
	if len(params) != len(prompts) {
		return nil, fmt.Errorf("%d prompts but %d params", len(prompts), len(params))
	}
	out := make([]Turn, len(prompts))
	coll := s.expertParallel()
	fail := func(err error) ([]Turn, error) {
		if coll != nil {
			coll.Abort(err) // the other ranks would wait for this one's calls
		}
		return nil, err
	}
	for lo := 0; ; {
		if coll == nil && lo == len(prompts) {
			break
		}
		if coll != nil {
			// Every rank runs as many waves, those past its own prompts
			// empty (lockstep.go).
			more, err := moreWaves(coll, lo < len(prompts))
			if err != nil {
				return nil, err
			}
			if !more {
				break
			}
			if lo == len(prompts) {
				if err := s.Run(ctx, nil); err != nil {
					return nil, err
				}
				continue
			}
		}
		var seqs []*Seq
		release := func() {
			for _, q := range seqs {
				s.Release(q)
			}
		}
		hi := lo
		for hi < len(prompts) {
			n := 1
			for hi+n < len(prompts) && slices.Equal(prompts[hi+n], prompts[hi]) {
				n++
			}
			if !s.CanStart(len(prompts[hi]), n) {
				n = 1 // a group larger than what is free runs in parts
				if !s.CanStart(len(prompts[hi]), 1) {
					break
				}
			}
			qs, err := s.StartGroup(prompts[hi], params[hi:hi+n])
			if err != nil {
				release()
				return fail(fmt.Errorf("prompt %d: %w", hi, err))
			}
			seqs = append(seqs, qs...)
			hi += n
		}
		if hi == lo {
			return fail(fmt.Errorf("all %d cache slots hold sequences, or their blocks are reserved; Release them before Generate", s.cfg.Slots))
		}
		err := s.Run(ctx, seqs)
		for i, q := range seqs {
			out[lo+i] = q.Turn
		}
		release()
		if err != nil {
			return nil, err
		}
		lo = hi
	}
	return out, nil
}
