package rubric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/grpo-dev/grpo/chat"
)

// JudgeConfig describes an LLM judge behind an OpenAI-compatible
// chat-completions endpoint (OpenAI, vLLM, llama.cpp server, Ollama...).
type JudgeConfig struct {
	// BaseURL is the API root, e.g. "http://127.0.0.1:8000/v1"; requests go
	// to BaseURL + "/chat/completions".
	BaseURL string
	Model   string
	// APIKeyEnv names the environment variable holding the API key
	// (e.g. "OPENAI_API_KEY"); "" sends no Authorization header.
	APIKeyEnv string
	// Template is the judge's prompt; {question}, {answer} and {response}
	// are replaced by the last user message of the prompt, the reference
	// answer and the model's final answer (thinking stripped). Default:
	// DefaultJudgeTemplate.
	Template string
	// Timeout bounds one request (default 60 s).
	Timeout time.Duration
	// MaxTokens caps the judge's reply (default 16; raise it for judges
	// that think before answering).
	MaxTokens int
	// Client, if set, sends the requests (default http.DefaultClient).
	Client *http.Client
	// Chat, if set, asks the judge instead of BaseURL, APIKeyEnv and
	// Client: an endpoints.toml endpoint's client (with its replicas,
	// retries and key handling) behind a function, so rubric stays free of
	// HTTP clients. It gets the prompt and MaxTokens and returns the reply.
	Chat func(ctx context.Context, prompt []chat.Message, maxTokens int) (string, error)
}

// DefaultJudgeTemplate asks for a yes/no verdict.
const DefaultJudgeTemplate = `Given a ground-truth answer and a response, decide whether the response is correct.

Question:
{question}

Ground-truth answer:
{answer}

Response:
{response}

Reply "yes" if the response is correct and "no" if it is not.`

// Judge returns a reward function that asks an LLM whether the final answer
// is right. The reply scores 1 for "yes", 0 for "no", or the number it holds
// when that is in [0, 1]; anything else is an error (scored 0 and counted).
func Judge(cfg JudgeConfig) (Func, error) {
	if cfg.Chat == nil {
		if err := checkURL(cfg.BaseURL); err != nil {
			return nil, fmt.Errorf("rubric: judge base_url: %v", err)
		}
		if cfg.Model == "" {
			return nil, errors.New("rubric: judge has no model; give the model name the endpoint serves")
		}
	}
	if cfg.Template == "" {
		cfg.Template = DefaultJudgeTemplate
	}
	if !strings.Contains(cfg.Template, "{response}") {
		return nil, errors.New("rubric: judge template has no {response} placeholder; the judge would never see the answer")
	}
	if cfg.Timeout < 0 || cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("rubric: judge has negative timeout %v or max_tokens %d", cfg.Timeout, cfg.MaxTokens)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = 16
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	if cfg.Chat != nil {
		return judgeWith(cfg), nil
	}
	headers := map[string]string{}
	if cfg.APIKeyEnv != "" {
		key := os.Getenv(cfg.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("rubric: judge api_key_env %s is not set; export it or leave api_key_env empty", cfg.APIKeyEnv)
		}
		headers["Authorization"] = "Bearer " + key
	}
	endpoint := strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions"
	return func(ctx context.Context, r Rollout) (Score, error) {
		prompt := judgePrompt(cfg.Template, r)
		payload, err := json.Marshal(chatRequest{
			Model:       cfg.Model,
			Messages:    []chat.Message{{Role: "user", Content: prompt}},
			MaxTokens:   cfg.MaxTokens,
			Temperature: 0,
		})
		if err != nil {
			return Score{}, err
		}
		body, err := postJSON(ctx, cfg.Client, endpoint, headers, payload, cfg.Timeout, defaultMaxOutput)
		if err != nil {
			return Score{}, fmt.Errorf("judge: %v", err)
		}
		var resp chatResponse
		if err := json.Unmarshal(body, &resp); err != nil || len(resp.Choices) == 0 {
			return Score{}, fmt.Errorf("judge: %s: reply %s is not a chat completion with choices", endpoint, preview(body))
		}
		v, err := judgeVerdict(resp.Choices[0].Message.Content)
		if err != nil {
			return Score{}, fmt.Errorf("judge: %v", err)
		}
		return Score{Value: v}, nil
	}, nil
}

// judgePrompt fills the template in one pass, so a response containing
// "{answer}" is not expanded.
func judgePrompt(template string, r Rollout) string {
	return strings.NewReplacer(
		"{question}", r.Question(),
		"{answer}", r.Answer,
		"{response}", StripThink(r.LastAssistant()),
	).Replace(template)
}

// judgeWith asks through cfg.Chat.
func judgeWith(cfg JudgeConfig) Func {
	return func(ctx context.Context, r Rollout) (Score, error) {
		ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
		reply, err := cfg.Chat(ctx, []chat.Message{{Role: "user", Content: judgePrompt(cfg.Template, r)}}, cfg.MaxTokens)
		if err != nil {
			return Score{}, fmt.Errorf("judge: %v", err)
		}
		v, err := judgeVerdict(reply)
		if err != nil {
			return Score{}, fmt.Errorf("judge: %v", err)
		}
		return Score{Value: v}, nil
	}
}

type chatRequest struct {
	Model       string         `json:"model"`
	Messages    []chat.Message `json:"messages"`
	MaxTokens   int            `json:"max_tokens"`
	Temperature float64        `json:"temperature"`
}

type chatResponse struct {
	Choices []struct {
		Message chat.Message `json:"message"`
	} `json:"choices"`
}

// judgeVerdict reads "yes"/"no" (any case, with markdown or punctuation
// around it) or a number in [0, 1] from the start of the judge's reply,
// after its thinking.
func judgeVerdict(reply string) (float64, error) {
	text := strings.ToLower(StripThink(reply))
	word := strings.Trim(firstField(text), "*_`'\".,!:;()[]")
	switch word {
	case "yes", "correct", "true":
		return 1, nil
	case "no", "incorrect", "false":
		return 0, nil
	}
	if v, ok := ParseNumber(word); ok && v >= 0 && v <= 1 {
		return v, nil
	}
	return 0, fmt.Errorf("reply %s is neither yes/no nor a number in [0, 1]; make the template ask for one", preview([]byte(reply)))
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}
