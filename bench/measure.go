package bench

import (
	"fmt"
	"math/rand/v2"

	"github.com/grpo-dev/grpo/estimate/perf"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// measureModel returns prefill and decode throughput in tokens/s, fills
// counts on a backend that counts and, with o.Profile, appends the
// profiles of one prefill and one decode step (replayed, and op by op).
func measureModel(m *model.Model, o Options, counts *Counts, profiles *[]PhaseProfile) (prefill, decode float64, err error) {
	rng := rand.New(rand.NewPCG(7, 7))
	maxLen := o.Prefill + o.Decode
	cache, err := perf.DecodeCache(m, o.Batch, maxLen)
	if err != nil {
		return 0, 0, fmt.Errorf("bench: %w", err)
	}
	defer cache.Free()
	// With Group G only each group's first slot has a prompt to
	// prefill; the others fork it after the prefill figure.
	prompts := make([][]int32, o.Batch)
	for s := 0; s < o.Batch; s += o.Group {
		prompts[s] = make([]int32, o.Prefill)
		for i := range prompts[s] {
			prompts[s][i] = int32(rng.IntN(m.Config.VocabSize))
		}
	}
	chunkTokens := o.PrefillChunk
	if o.PrefillLogits == "all" {
		// Every position's logits: a chunk's logits must stay within the
		// backends' int32 index space (16384 × 151936 would not).
		chunkTokens = min(chunkTokens, maxLogits/m.Config.VocabSize)
	}
	chunks := prefillChunks(prompts, chunkTokens)
	if o.PrefillLogits == "all" {
		for i := range chunks {
			chunks[i].logitRows = nil // every row
		}
	}
	be := m.Backend
	prefillAll := func() error {
		for _, c := range chunks {
			logits, err := m.Forward(cache, &c.batch, c.logitRows)
			if err != nil {
				return err
			}
			be.Free(logits)
		}
		return be.Sync()
	}
	d, err := best(o.Repeat, func() (err error) {
		counts.Prefill, err = perf.Measure(be, prefillAll)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	prefill = float64(o.Batch/o.Group*o.Prefill) / d.Seconds()
	if o.Profile {
		if err := addProfile(profiles, be, fmt.Sprintf("prefill %dx%d", o.Batch/o.Group, o.Prefill), "the prompts' forward in chunks, logits as --prefill-logits says", prefillAll); err != nil {
			return 0, 0, err
		}
	}
	if o.Decode == 0 {
		return prefill, 0, nil
	}
	for s := range o.Batch {
		if lead := s - s%o.Group; lead != s {
			if err := cache.Fork(s, lead, o.Prefill); err != nil {
				return 0, 0, fmt.Errorf("bench: %w", err)
			}
		}
	}
	// Decode: the static decode step the sampler takes (model.Decoder):
	// each step's tokens are the previous step's draws, made on the device
	// from per-sequence streams and fed back there; 8 bytes per sequence
	// come back to the host. With graphs (cuda, emu) a step is one graph
	// launch once the first two steps have warmed it up and captured it.
	dec := m.NewDecoder(o.Batch)
	defer dec.Free()
	rows := make([]model.DecodeRow, o.Batch)
	tok, lp := make([]int32, o.Batch), make([]float32, o.Batch)
	step := func(i int) error {
		if err := dec.Step(cache, tok, lp); err != nil {
			return fmt.Errorf("bench: decode step %d: %w", i, err)
		}
		for s, t := range tok {
			if t < 0 {
				return fmt.Errorf("bench: decode step %d: sequence %d drew no token (NaN or +Inf logits)", i, s)
			}
		}
		return nil
	}
	load := func() error {
		for s := range rows {
			rows[s] = model.DecodeRow{Slot: int32(s), Pos: int32(o.Prefill), Token: prompts[s-s%o.Group][o.Prefill-1],
				Params: kernels.SampleParams{Temperature: o.Temperature, TopP: 1}, PCGHi: rng.Uint64(), PCGLo: rng.Uint64()}
		}
		return dec.Load(cache, rows, -1)
	}
	d, err = best(o.Repeat, func() error {
		if err := load(); err != nil {
			return err
		}
		for i := range o.Decode {
			c, err := perf.Measure(be, func() error { return step(i) })
			if err != nil {
				return err
			}
			counts.DecodeStep = c // the last step's
		}
		return be.Sync()
	})
	if err != nil {
		return 0, 0, err
	}
	if counts.DecodeStep != nil {
		counts.DecodeKVBytes = perf.DecodeKVBytes(m.Config, o.Batch, o.Prefill+o.Decode-1, perf.KVDType(be))
		counts.DecodeKVDType = cache.K[0].DType().String()
	}
	if err := dec.GraphErr(); err != nil {
		counts.DecodeGraphErr = err.Error()
		if o.Progress.OpByOp != nil {
			o.Progress.OpByOp(err)
		}
	}
	if o.Profile {
		if err := profileDecode(be, dec, load, step, o, profiles); err != nil {
			return 0, 0, err
		}
	}
	return prefill, float64(o.Batch*o.Decode) / d.Seconds(), nil
}

// profileDecode profiles one decode step as the figure ran it — one
// graph replay on a device with graphs — and one op by op
// (model.Decoder.Eager), whose profile names the kernels the replay
// runs. Each is the second step after a Load where the cache has room
// (the first may upload a block table), as in the figure.
func profileDecode(be kernels.Backend, dec *model.Decoder, load func() error, step func(int) error, o Options, profiles *[]PhaseProfile) error {
	modes := []bool{false, true}
	if _, graphs := be.(kernels.Graphs); !graphs || dec.GraphErr() != nil {
		modes = []bool{true}
	}
	defer func() { dec.Eager = false }()
	for _, eager := range modes {
		dec.Eager = eager
		if err := load(); err != nil {
			return err
		}
		for i := range min(o.Decode-1, 1) {
			if err := step(i); err != nil {
				return err
			}
		}
		phase, note := fmt.Sprintf("decode step batch %d (graph replay)", o.Batch), "one replay of the captured step: its kernels are in the op-by-op profile"
		if eager {
			phase, note = fmt.Sprintf("decode step batch %d (op by op)", o.Batch), "the step uncaptured, to time each kernel: the launch gaps a graph removes are in the span and wall"
		}
		if err := addProfile(profiles, be, phase, note, func() error { return step(min(o.Decode-1, 1)) }); err != nil {
			return err
		}
	}
	return nil
}

// prefillChunk is one prefill forward: whole or partial prompts, and the
// rows of the batch that are a prompt's last token (the only logits
// generation needs).
type prefillChunk struct {
	batch     model.Batch
	logitRows []int32
}

// prefillChunks cuts the prompts into forwards of at most maxTokens
// tokens, as a serving engine's chunked prefill does: the activations and
// every op's index space stay bounded whatever Batch × Prefill is. A
// prompt may span chunks (it continues at its position in the KV cache);
// an empty one (a forked rollout's slot) has nothing to prefill.
func prefillChunks(prompts [][]int32, maxTokens int) []prefillChunk {
	var out []prefillChunk
	var cur prefillChunk
	for s, p := range prompts {
		for start := 0; start < len(p); {
			n := min(len(p)-start, maxTokens-cur.batch.Len())
			cur.batch.Add(s, start, p[start:start+n]...)
			start += n
			if start == len(p) {
				cur.logitRows = append(cur.logitRows, int32(cur.batch.Len()-1))
			}
			if cur.batch.Len() == maxTokens {
				out = append(out, cur)
				cur = prefillChunk{}
			}
		}
	}
	if cur.batch.Len() > 0 {
		out = append(out, cur)
	}
	return out
}
