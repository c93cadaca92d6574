// Package eval owns evaluation runs: an environment's eval split played on
// a rollout.Engine and scored as avg@k, pass@1 and pass@k, in passes that
// bound the KV cache, with results rows streamed as JSONL. grpo eval, GEPA's
// scoring and the trainer's periodic evaluation all play their episodes
// through Run.
package eval
