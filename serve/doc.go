// Package serve is grpo's OpenAI-compatible inference server (grpo serve):
// GET /v1/models, POST /v1/chat/completions and /v1/completions (streamed
// as server-sent events or whole), vLLM's extras (return_token_ids,
// chat_template_kwargs, top_k, min_p, ignore_eos, stop_token_ids) and its
// runtime LoRA endpoints POST /v1/load_lora_adapter and
// /v1/unload_lora_adapter, plus a Prometheus /metrics.
//
// Continuous batching. One scheduler goroutine owns the sampler and its KV
// cache. Between decode steps it admits queued requests into free slots and
// releases finished or abandoned ones, so a request starts as soon as a
// slot frees, not when a whole batch ends. A request's n choices take n
// slots together. Requests beyond the free slots wait in a queue of
// bounded length; beyond that they get 429. A client that disconnects
// cancels its request's context, and the scheduler frees its slots at the
// next step.
//
// Adapters. The model applies one LoRA to a whole forward pass, so the
// scheduler groups requests by adapter: it admits requests for the adapter
// of the running batch, and when the request at the head of the queue wants
// another adapter it stops admitting, lets the batch drain, switches the
// adapter and goes on (first come, first served across adapters). A
// request names its adapter by the model field: the base model's name, or
// an adapter's name from --adapter NAME=DIR or load_lora_adapter.
//
// Tools are rendered by the chat template; a finished turn is read by the
// tool-call parser the template implies (package tokenizer's Hermes or
// Llama 3 JSON), and well-formed calls come back as tool_calls.
//
// Sampling is package sampler's: each choice has its own random stream
// seeded by the request's seed (choice 0 with the seed itself, choice i
// with sampler.DeriveSeed(seed, i)), so with a seed a choice's tokens do
// not depend on what else the server is running. Log-probs are the model's
// raw ones (temperature 1, untruncated: vLLM's raw_logprobs), the values a
// GRPO trainer needs as behaviour log-probs.
package serve
