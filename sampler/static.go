package sampler

import (
	"encoding/binary"
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// The static decode path: on a backend that captures graphs, a step in
// which every live sequence only has its last sampled token pending runs
// through model.Decoder — one graph launch per step once warm, the
// tokens, positions and random streams kept on the device, and only the
// tokens and log-probs coming back (and, when the sampler records expert
// routing, each token's experts in the tokens' download: routing.go). The
// set of sequences is loaded into the decoder when it differs from the
// previous static step's (a sequence finished, joined or was appended
// to); the host mirrors each stream's draws so a reload continues them
// exactly.

// staticState is the sampler's decoder and the sequences it holds.
type staticState struct {
	decoder *model.Decoder
	loaded  []*Seq // the sequences of the last static step, in order; nil after any other step
	// pad is the padding slot (sampler.New: the cache's last, never
	// started), whose position 0 the padding rows write, in the one block
	// the pool holds beyond Config.Blocks; −1 on a backend without graphs.
	pad    int
	rows   []model.DecodeRow
	toks   []int32
	lps    []float32
	record []int32 // the step's routing record (recordingRouting), token-major
	// bucket is the bucket the loaded set was given under expert
	// parallelism (lockstep.go), 0 for the decoder's own choice.
	bucket int
}

// staticOK reports whether live can take a static step. A sparse model
// decodes statically too, recording routing or not: its MoE forward
// (model.moeForward) is device work on fixed shapes, and the graph writes
// the experts it routes to into the bucket's workspace, which the step
// downloads with the tokens (model.Decoder.StepRecording).
func (s *Sampler) staticOK(live []*Seq) bool {
	if _, ok := s.m.Backend.(kernels.Graphs); !ok || len(live) > s.cfg.Slots {
		return false
	}
	for _, q := range live {
		if q.awaitsFork || len(q.tokens)-q.cached != 1 || q.params.TopLogprobs > 0 {
			return false
		}
	}
	return true
}

// staticStep is step for a set that staticOK accepted, in a bucket of
// the decoder's choice (bucket 0) or, under expert parallelism, the one
// the ranks agreed on (lockstep.go; live may then be empty: a step of
// padding only).
func (s *Sampler) staticStep(live []*Seq, bucket int) error {
	st := &s.static
	d := s.decoder()
	if !sameSeqs(st.loaded, live) || st.bucket != bucket {
		if err := s.loadStatic(live, bucket); err != nil {
			st.loaded = nil
			return err
		}
	}
	n := len(live)
	st.toks, st.lps = grow(st.toks, n), grow(st.lps, n)
	var record []int32
	if s.recordingRouting() && n > 0 {
		st.record = grow(st.record, s.m.Config.RoutingLen(n))
		record = st.record
	}
	if err := d.StepRecording(s.cache, st.toks, st.lps, record); err != nil {
		st.loaded = nil
		return fmt.Errorf("sampler: %w", err)
	}
	s.stats.SharedPrefixRows += d.SharedRows()
	for i, t := range st.toks {
		if t < 0 {
			st.loaded = nil
			return badRow(s.m.Backend, d.Logits(), i, s.m.Config.VocabSize)
		}
	}
	per := s.m.Config.RoutingLen(1)
	for i, q := range live {
		if record != nil {
			q.experts = append(q.experts, record[i*per:(i+1)*per]...)
		}
		q.cached++
		if q.params.Temperature > 0 {
			q.rng.Float64() // the device drew this token's u from the same stream
		}
		q.accept(st.toks[i], float64(st.lps[i]), s.dec)
	}
	return nil
}

// decoder is the static path's decoder, made on first use.
func (s *Sampler) decoder() *model.Decoder {
	st := &s.static
	if st.decoder == nil {
		st.decoder = s.m.NewDecoder(s.cfg.Slots)
		st.decoder.SetSharedPrefixAttention(!s.cfg.NoSharedPrefixAttention)
	}
	return st.decoder
}

// loadStatic loads live into the decoder, padded to the step's bucket
// with the padding slot: every slot may be taken and every block
// reserved, and the step still runs a power-of-two bucket (or the
// slots), never one of its exact size. bucket, when not 0, is the
// bucket the expert-parallel ranks agreed on.
func (s *Sampler) loadStatic(live []*Seq, bucket int) error {
	st := &s.static
	st.rows = st.rows[:0]
	for _, q := range live {
		hi, lo, err := pcgState(q)
		if err != nil {
			return err
		}
		st.rows = append(st.rows, model.DecodeRow{Slot: int32(q.slot), Pos: int32(q.cached), Token: q.tokens[q.cached],
			Params: q.params.SampleParams, PCGHi: hi, PCGLo: lo})
	}
	load := func() error { return st.decoder.Load(s.cache, st.rows, st.pad) }
	if bucket > 0 {
		load = func() error { return st.decoder.LoadBucket(s.cache, st.rows, st.pad, bucket) }
	}
	if err := load(); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	st.loaded, st.bucket = append(st.loaded[:0], live...), bucket
	return nil
}

func sameSeqs(a, b []*Seq) bool {
	if a == nil || len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// pcgState reads q's stream state (math/rand/v2 exposes a PCG's fields
// only through its binary form: "pcg:", hi and lo big-endian).
func pcgState(q *Seq) (hi, lo uint64, err error) {
	b, err := q.pcg.MarshalBinary()
	if err != nil || len(b) != 20 {
		return 0, 0, fmt.Errorf("sampler: reading a random stream's state: %d bytes, %v", len(b), err)
	}
	return binary.BigEndian.Uint64(b[4:]), binary.BigEndian.Uint64(b[12:]), nil
}

// dropPad returns the padding slot's block to the pool (a padded step
// maps it again), so that a sampler whose sequences are all released
// holds no block and a reused cache starts whole (KVCache.ResetBlocks).
func (s *Sampler) dropPad() {
	if s.static.pad >= 0 {
		s.cache.Release(s.static.pad)
	}
}

// freeStatic releases the decoder's workspaces.
func (s *Sampler) freeStatic() {
	if s.cache != nil {
		s.dropPad()
	}
	if s.static.decoder != nil {
		s.static.decoder.Free()
		s.static.decoder = nil
	}
	s.static.loaded = nil
}
