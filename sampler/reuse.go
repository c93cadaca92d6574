package sampler

import "fmt"

// A sampler outlives one batch of sequences when a caller (rollout's
// kept engine) plays many batches — GRPO steps, evals — on one model: its
// KV pool stays allocated and its decoder keeps each bucket's workspace
// and captured graph, which are valid for as long as the cache is (the
// adapter's buffers are updated in place). Reuse sizes it for the next
// batch within what its cache holds.

// Fits reports whether cfg (defaults filled in as New fills them) can run
// on this sampler's cache: no more slots, no longer sequences and no more
// blocks than it holds for sequences (Capacity), in blocks of the same
// size, and, for a model with sliding-window layers, a sliding pool no
// larger than the cache's (windowBlocks: a larger prefill chunk needs
// more).
func (s *Sampler) Fits(cfg Config) bool {
	cfg, err := cfg.withDefaults()
	if err != nil || s.cache == nil {
		return false
	}
	c := s.Capacity()
	pad := s.cache.Slots - c.Slots
	return cfg.Slots <= c.Slots && cfg.MaxLen <= c.MaxLen && cfg.Blocks <= c.Blocks && cfg.BlockSize == c.BlockSize &&
		windowBlocks(s.m, cfg, pad) <= s.cache.WindowPool().Blocks
}

// Capacity is the largest Config the sampler's cache holds (slots, max
// length, blocks and their size; the other fields are zero): the cache's
// own less the padding slot and block that New adds on a backend with
// graphs. A sampler built with Capacity's sizes has this cache's.
func (s *Sampler) Capacity() Config {
	c := s.cache
	if c == nil {
		return Config{}
	}
	pad := 0
	if s.static.pad >= 0 {
		pad = 1
	}
	return Config{Slots: c.Slots - pad, MaxLen: c.MaxLen, BlockSize: c.BlockSize, Blocks: c.NumBlocks - pad}
}

// Reuse makes the sampler behave as New(m, dec, cfg) would, on the cache
// it holds: slots, sequence length, block budget and prefill chunk are
// cfg's, every slot and block is free, the slots are taken in a new
// sampler's order, the decoder pads to cfg's slots, and the counts start
// from zero. Every sequence must have been released. The decoder's
// graphs are kept: that is the point. dec replaces the stop-string
// decoder.
func (s *Sampler) Reuse(dec Decoder, cfg Config) error {
	if s.cache == nil {
		return fmt.Errorf("sampler: reuse after Close")
	}
	if held := s.cfg.Slots - len(s.free); held > 0 || s.reserved != 0 {
		return fmt.Errorf("sampler: reuse while %d sequences hold cache slots (%d blocks reserved); release them first", held, s.reserved)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	if !s.Fits(cfg) {
		c := s.Capacity()
		return fmt.Errorf("sampler: slots %d, max_len %d, %d blocks of %d do not fit the cache's %d slots, max_len %d, %d blocks of %d; make a new sampler",
			cfg.Slots, cfg.MaxLen, cfg.Blocks, cfg.BlockSize, c.Slots, c.MaxLen, c.Blocks, c.BlockSize)
	}
	s.dropPad()
	if err := s.cache.ResetBlocks(); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	s.dec, s.cfg, s.stats = dec, cfg, Stats{}
	s.freeAllSlots()
	s.static.loaded = nil
	if d := s.static.decoder; d != nil {
		d.SetMaxRows(cfg.Slots)
		// Every step pads (the padding slot), so its bucket is a power of
		// two or the slots; the powers of two recur in every batch, and
		// a bucket of another size is an earlier batch's slots, kept
		// only while batches of that size keep using it.
		d.DropUnused(func(n int) bool { return n&(n-1) == 0 || n == cfg.Slots })
	}
	return nil
}
