package model

import "github.com/grpo-dev/grpo/kernels"

// decodeBucketSpecs lists a static decode step's workspace of n rows
// beside its inference set: the token/routing record (out: the tokens,
// then each sparse layer's experts), slots, positions and their advance,
// the sampling parameters and PCG states, the prefix groups, the
// log-probs, the embedded input, the logits, a hybrid's runs; and each
// block kind's x·Aᵀ outside the inference set (o_proj's, down_proj's and
// each fused group's), one each at the largest rank any layer has (the
// layers run one after another in it).
func (c *Config) decodeBucketSpecs(b *decodeBucket, s *layerActs, n int, ad *AdapterShape) bufSpecs {
	var sp bufSpecs
	sp.i32(&b.out, n+c.RoutingLen(c.epRanks()*n)) // under expert parallelism every rank's rows route here (decode_ep.go)
	sp.i32(&b.slot, n)
	sp.i32(&b.pos, n)
	sp.i32(&b.delta, n)
	sp.i32(&b.params, n*kernels.SampleParamWords)
	sp.i32(&b.state, n*kernels.PCGWords)
	sp.i32(&b.groups, n*kernels.PrefixGroupWords)
	sp.f32(&b.lp, n)
	sp.f32(&b.x, n*c.HiddenSize)
	sp.f32(&b.logits, n*c.VocabSize)
	if c.LinearLayers() > 0 {
		sp.i32(&b.runs, 4*n)
	}
	mixers, channels := c.blockKinds()
	for _, b := range mixers {
		sp = append(sp, b.loraSpecs(c, s, -1, n, ad)...)
	}
	for _, b := range channels {
		sp = append(sp, b.loraSpecs(c, s, -1, n, ad)...)
	}
	return sp
}

// DecodeBucketBytes is what the static decode step's workspace of n rows
// (model.Decoder's bucket) allocates under the adapter ad, with the bf16
// casts of the GEMMs' inputs when casts: what a sampler kept across steps
// holds for each bucket that has run.
func (c *Config) DecodeBucketBytes(n int, ad AdapterShape, casts bool) int64 {
	var b decodeBucket
	s := &layerActs{}
	acts, moe := c.inferenceActSpecs(s, n, &ad, casts, kernels.F32) // newBucket's
	total := acts.bytes() + moe.bytes() + c.decodeBucketSpecs(&b, s, n, &ad).bytes()
	if c.shardedExperts() {
		var g gatheredMoE
		total += c.gatheredSpecs(&g, n, &ad).bytes()
	}
	return total
}
