package sampler

// Stats counts the sampler's work since New or Reuse, for tests and benchmarks that
// compare paths (prefix sharing against a prefill per sequence).
type Stats struct {
	// Forwards is the Forward calls made; ForwardTokens the tokens they
	// carried (prefill and decode alike).
	Forwards, ForwardTokens int
	// Forked is the sequences that shared a group's prompt instead of
	// prefilling it.
	Forked int
	// SharedPrefixRows sums, over static decode steps, the rows that read
	// their prompt's blocks once per group (kernels.AttentionSharedPrefix).
	SharedPrefixRows int
}

// Stats returns the counts so far.
func (s *Sampler) Stats() Stats { return s.stats }
