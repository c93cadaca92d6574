// Package endpoints reads the Lab's configs/endpoints.toml and talks to the
// OpenAI-compatible servers it names (OpenAI, vLLM, grpo serve, ...). The
// file is verifiers' endpoint registry: each [[endpoint]] table has an
// endpoint_id, the model name the server knows, the API root url, key (the
// NAME of the environment variable holding the API key, never the key),
// an optional client type and extra headers; tables sharing an id are
// replicas of one model, and a Client spreads requests over them.
//
// A Client sends chat and completions requests with a concurrency limit, a
// timeout per attempt, and bounded retries with exponential backoff on 429
// and 5xx (waiting at least what a Retry-After header asks, up to a cap).
// Its errors name the endpoint id, the URL and the HTTP status; the API key
// appears in no error and no log line.
//
// The request and response types are the OpenAI wire format plus vLLM's
// extras (top_k, min_p, return_token_ids, chat_template_kwargs, token ids
// in responses), so a trainer can ask a server for the token ids and
// log-probs of each completion under a seed of its choosing. Package serve
// answers with the same types.
package endpoints
