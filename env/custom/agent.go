package custom

import (
	"fmt"
	"sort"
	"time"

	"github.com/grpo-dev/grpo/env"
)

// agentConfig is the [agent] table: the environment's episodes are
// played by an external agent program that calls the policy as its
// OpenAI-compatible model (package rollout's interception endpoint). The
// program is the user's own, run as a child process in the environment's
// directory, not in the sandbox.
type agentConfig struct {
	Command      []string          `toml:"command"`
	Timeout      string            `toml:"timeout"`
	Env          map[string]string `toml:"env"`
	PromptTokens int               `toml:"prompt_tokens"`
}

// Defaults of [agent]: an episode's deadline, the room kept for the
// program's first request, and the model calls an episode may make when
// max_turns is not set.
const (
	defaultAgentTimeout      = 10 * time.Minute
	defaultAgentPromptTokens = 1024
	defaultAgentTurns        = 10
)

// checkAgent validates [agent] and fills its defaults.
func (c *customConfig) checkAgent(f *configFile) error {
	a := c.Agent
	if a == nil {
		return nil
	}
	at := func(key string) string { return f.atTable("agent", key, -1) }
	switch {
	case len(a.Command) == 0 || a.Command[0] == "":
		return fmt.Errorf("%s: [agent] needs command = [\"program\", \"arg\", ...], e.g. [\"python3\", \"agent.py\"] (run in the environment's directory)", f.path)
	case len(c.Tool) > 0:
		return fmt.Errorf("%s: [agent] and [[tool]] cannot be combined: the agent program runs its own tools; remove one", at("command"))
	case a.PromptTokens < 0:
		return fmt.Errorf("%s: [agent] prompt_tokens = %d must be positive", at("prompt_tokens"), a.PromptTokens)
	}
	if a.Timeout != "" {
		if d, err := time.ParseDuration(a.Timeout); err != nil || d <= 0 {
			return fmt.Errorf("%s: [agent] timeout %q is not a positive duration; write e.g. \"5m\"", at("timeout"), a.Timeout)
		}
	}
	if a.PromptTokens == 0 {
		a.PromptTokens = defaultAgentPromptTokens
	}
	if c.MaxTurns == 0 {
		c.MaxTurns = defaultAgentTurns
	}
	return nil
}

// agentEnv is a custom environment with an [agent] table.
type agentEnv struct{ *customEnv }

// Agent runs [agent]'s command in the environment's directory.
func (e agentEnv) Agent() env.AgentSpec {
	a := e.cfg.Agent
	timeout := defaultAgentTimeout
	if d, err := time.ParseDuration(a.Timeout); err == nil && d > 0 {
		timeout = d
	}
	vars := make([]string, 0, len(a.Env))
	for k, v := range a.Env {
		vars = append(vars, k+"="+v)
	}
	sort.Strings(vars)
	return env.AgentSpec{Command: a.Command, Dir: e.dir, Env: vars, Timeout: timeout, PromptTokens: a.PromptTokens}
}

// ReplyTokens keeps a tool result's room for a program's messages
// between two model calls.
func (agentEnv) ReplyTokens() int { return env.ToolReplyTokens }
