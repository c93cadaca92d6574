// Package rollout owns episodes: batched single- and multi-turn rollouts of
// an environment over a sampler. Each prompt is rendered through the chat
// template once, and those tokens both size the KV cache and start the
// episode; the environment's replies are appended as tokens (token-in
// continuation), never re-templated, so a trajectory is exactly the tokens
// the model saw. Inference is local: a sampler over the model's backend.
package rollout
