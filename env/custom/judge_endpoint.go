package custom

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/endpoints"
)

// judgeEndpoint resolves a judge term's endpoint key to a chat function
// over that endpoint's client (nil when the term names base_url instead).
func judgeEndpoint(dir string, tc termConfig) (func(context.Context, []chat.Message, int) (string, error), error) {
	if tc.Endpoint == "" {
		if tc.EndpointsPath != "" {
			return nil, errors.New("endpoints_path is set but endpoint is not; name the judge's endpoint_id")
		}
		return nil, nil
	}
	if tc.BaseURL != "" || tc.Model != "" || tc.APIKeyEnv != "" {
		return nil, errors.New("endpoint names the judge's url, model and key; drop base_url, model and api_key_env")
	}
	path := endpoints.DefaultPath
	if tc.EndpointsPath != "" {
		path = tc.EndpointsPath
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
	}
	reg, err := endpoints.Load(path)
	if err != nil {
		return nil, fmt.Errorf("judge endpoint %q: %w", tc.Endpoint, err)
	}
	c, err := reg.Client(tc.Endpoint, endpoints.Options{})
	if err != nil {
		return nil, fmt.Errorf("judge: %w", err)
	}
	return func(ctx context.Context, msgs []chat.Message, maxTokens int) (string, error) {
		greedy := 0.0
		resp, err := c.Chat(ctx, &endpoints.ChatRequest{Messages: msgs, MaxTokens: &maxTokens, Temperature: &greedy})
		if err != nil {
			return "", err
		}
		return resp.Choices[0].Message.Text(), nil
	}, nil
}
