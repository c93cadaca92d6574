package sampler

import "math/rand/v2"

// seqStream is a sequence's random stream for seed: StartGroup's (and so
// Start's) and Reseed's.
func seqStream(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d))
}

// Reseed starts the sequence's random stream afresh from seed, as Start
// seeds it, for the turns that follow. A multi-turn driver reseeds each
// turn from the episode's seed and the turn's index, so that a server —
// which sees each turn as a request of its own and cannot continue one
// stream across requests — draws what this sampler draws: a sequence
// reseeded after its first turn samples what a new sequence started on
// its tokens with that seed samples.
func (q *Seq) Reseed(seed uint64) {
	q.params.Seed = seed
	q.rng = seqStream(seed)
}
