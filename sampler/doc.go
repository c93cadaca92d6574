// Package sampler owns batched autoregressive generation: many sequences
// advance together through one KV cache (prompts of different lengths are
// prefilled in one packed batch, then every live sequence gets one token per
// Forward call, each at its own position), with temperature, top-k, top-p
// and min-p sampling, per-turn and total length limits, stop tokens and
// stop strings, and a per-sequence seed that makes generation reproducible.
//
// A sequence lives in one cache slot from Start to Release, so a multi-turn
// driver can Append environment tokens after a turn and Run again: only the
// new tokens are prefilled, the earlier ones stay in the cache exactly as
// they were sampled.
//
// The cache is paged (model.KVCache): a slot is a row of block tables over
// a pool of blocks of BlockSize tokens. StartGroup starts a GRPO group's
// sequences on one prompt, which is prefilled once: the others fork its
// blocks (reference-counted, the partly filled last one copied by its
// first writer) and prefill only the prompt's last token, so each samples
// from logits of its own, exactly as after its own prefill. A sequence
// reserves blocks for its worst case (MaxLen tokens, the group's shared
// prompt blocks counted once) when it starts, so a started sequence never
// runs out of cache; CanStart tells a scheduler (rollout, serve) whether
// a group fits now, and the rest waits in the caller's queue.
//
// Log-probs. For every generated token the sampler returns its log-prob
// under the model's own distribution: log-softmax of the raw logits at
// temperature 1, with no top-k/top-p/min-p truncation. That is exactly what
// model.TokenLogprobs and the trainer's forward recompute, so on-policy the
// GRPO importance ratio is 1. The sampling distribution itself is the
// processed one described by Params.
//
// Order of the sampling transforms, as vLLM's v1 sampler applies them
// (vllm/v1/sample/sampler.py: temperature, then the argmax-invariant logits
// processors — min-p — then top-k and top-p together): temperature, min-p,
// top-k, top-p. (vLLM's older v0 sampler applied min-p last; the two orders
// differ only when top-p and min-p are both on.)
//
// Sampling runs on the backend (kernels.SampleOps.Sample, whose doc is the
// exact spec): the logits stay where Forward left them, and one decode
// step downloads a token id and a log-prob per sequence. Each row carries
// its own sequence's parameters, so sequences sampled differently share a
// step. The random streams stay on the host: each sequence draws one
// uniform u per sampled token from its own PCG (none at temperature 0) and
// hands it to the op, so a token depends on neither the batch nor the
// backend. Rows whose logits hold NaN or +Inf come back flagged and end
// Run with an error naming the value, the sequence and the token id.
//
// On a backend that captures graphs (cuda, emu), a step in which every
// sequence has only its last sampled token pending is a static decode step
// (model.Decoder, static.go): the set is loaded into a device workspace
// once, each step is one graph launch that embeds the previous step's
// tokens, samples with SampleStream — the same draws from the same PCG
// streams, made on the device — and advances the positions there, and only
// the tokens and log-probs come back. The host mirrors each stream's draws,
// so when the set changes (a sequence finishes, joins or is appended to)
// it reloads the decoder and the tokens are those of the Forward path.
// Each step runs a bucket of a power-of-two rows (or the slots), the rows
// beyond the set padding that write position 0 of the padding slot: New
// gives the cache one slot and one block beyond Config's for it, never
// started and outside the reservations, so a step pads even when every
// slot is taken and every block reserved (a GRPO step), and a batch
// builds at most ⌈log2 slots⌉+1 buckets, not one per live count.
// A mixture-of-experts model decodes statically too (its sparse layers'
// buffers are in the workspace), also while the sampler records expert
// routing (Config.RecordExperts): the graph writes each sparse layer's
// experts into the workspace, the step brings them back in the tokens'
// download (model.Decoder.StepRecording), and each sequence's record grows
// as on the Forward path.
//
// A model whose experts are sharded over ranks (expert parallelism) makes
// a collective call in every sparse layer of every forward, so each
// rank's sampler — sampling its own share of the sequences — runs in
// lockstep with the others: one small host exchange per iteration agrees
// on a prefill, a static decode step in a common bucket, or the end, and
// a rank with nothing to run takes part idle (lockstep.go).
package sampler
