package endpoints

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// These calls address every replica of the endpoint, not one picked by
// load: a server that generates a trainer's rollouts must load each new
// adapter on all of them.

// LoadLoRA has every replica load the PEFT adapter in dir and serve it
// under name: vLLM's POST /load_lora_adapter (vLLM needs --enable-lora
// and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True for it), which grpo serve
// serves too. The server reads dir itself, so it must be a path the
// server sees.
func (c *Client) LoadLoRA(ctx context.Context, name, dir string) error {
	return c.onEachReplica(ctx, http.MethodPost, "/load_lora_adapter", map[string]string{"lora_name": name, "lora_path": dir}, nil)
}

// UnloadLoRA has every replica stop serving the adapter name (POST
// /unload_lora_adapter).
func (c *Client) UnloadLoRA(ctx context.Context, name string) error {
	return c.onEachReplica(ctx, http.MethodPost, "/unload_lora_adapter", map[string]string{"lora_name": name}, nil)
}

// modelList is a GET /models reply.
type modelList struct {
	Data []struct {
		ID string `json:"id"`
	} `json:"data"`
}

// CheckServes asks every replica for its models (GET /models) and fails,
// naming the replica, when one cannot be reached or does not serve model
// (each replica's own model name when model is "").
func (c *Client) CheckServes(ctx context.Context, model string) error {
	return c.onEachReplica(ctx, http.MethodGet, "/models", nil, func(r *replica, data []byte) error {
		want := model
		if want == "" {
			want = r.ep.Model
		}
		var ml modelList
		if err := json.Unmarshal(data, &ml); err != nil {
			return c.errorf(r, "/models", http.StatusOK, "the reply is not a model list (%v): %s", err, preview(data))
		}
		var ids []string
		for _, m := range ml.Data {
			ids = append(ids, m.ID)
		}
		if !slices.Contains(ids, want) {
			return c.errorf(r, "/models", http.StatusOK, "the server does not serve model %q (it serves %s)", want, strings.Join(ids, ", "))
		}
		return nil
	})
}

// onEachReplica sends one request to every replica in turn, each with the
// client's retries, and hands each 2xx reply to check (nil: any 2xx
// does); the first failure is returned.
func (c *Client) onEachReplica(ctx context.Context, method, path string, body any, check func(r *replica, data []byte) error) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("endpoint %s: encoding the request: %v", c.id, err)
		}
	}
	if err := c.acquire(ctx); err != nil {
		return err
	}
	defer c.release()
	for _, r := range c.replicas {
		err := c.withRetries(ctx, func() (time.Duration, error) {
			_, retryAfter, data, err := c.attempt(ctx, r, method, path, payload)
			if err != nil {
				return retryAfter, err
			}
			if check != nil {
				return 0, check(r, data)
			}
			return 0, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
