// Package pybridge runs a verifiers (Python) environment in a child
// process of the user's own python and speaks to it over a line-delimited
// JSON protocol: grpo samples the model, the child serves the
// environment's dataset rows, its replies in multi-turn episodes and its
// rubric's scores. Package env wraps a Bridge as an env.Environment.
//
// The protocol, version 1: every request is one JSON object on a line of
// the child's stdin, {"id": N, "op": OP, ...}; every response one on its
// stdout, {"id": N, "ok": true, "result": {...}} or {"id": N, "ok": false,
// "kind": KIND, "error": LINE}. The first request is "hello" (protocol,
// env_id, module, module_dir, args), answered with the environment's
// metadata; then "rows" (split, offset, limit), "reply" (episode, input on
// an episode's first turn, the conversation so far), "score" (episode,
// input, completion), "score_group" (episodes: one group's, scored
// together by a rubric with group reward functions), "drop" (episode) and
// "close", in any order and concurrently: responses may come back out of
// order and are matched by id. A failure of kind "missing_module" names
// the module in "missing".
package pybridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/grpo-dev/grpo/chat"
)

// Protocol is the version this package and the embedded script speak.
const Protocol = 1

// request is one line to the child. Only the fields of its op are set.
type request struct {
	ID        int64          `json:"id"`
	Op        string         `json:"op"`
	Protocol  int            `json:"protocol,omitempty"`
	EnvID     string         `json:"env_id,omitempty"`
	Module    string         `json:"module,omitempty"`
	ModuleDir string         `json:"module_dir,omitempty"`
	Args      map[string]any `json:"args,omitempty"`
	Split     string         `json:"split,omitempty"`
	Offset    int            `json:"offset,omitempty"`
	Limit     int            `json:"limit,omitempty"`
	Episode   string         `json:"episode,omitempty"`
	Episodes  []string       `json:"episodes,omitempty"`
	Input     *Row           `json:"input,omitempty"`
	Messages  []chat.Message `json:"messages,omitempty"`
	// Completion is a pointer so that an empty completion is still sent.
	Completion *[]chat.Message `json:"completion,omitempty"`
}

// response is one line from the child.
type response struct {
	ID     *int64          `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Kind   string          `json:"kind"`
	Error  string          `json:"error"`
	// Missing is the module a "missing_module" failure could not import.
	Missing string `json:"missing"`
}

// Hello is the environment's metadata, the answer to the handshake.
type Hello struct {
	Protocol int    `json:"protocol"`
	EnvID    string `json:"env_id"`
	EnvClass string `json:"env_class"`
	// Generation is "v0" (load_environment) or "v1" (a Taskset).
	Generation       string `json:"generation"`
	VerifiersVersion string `json:"verifiers_version"`
	Python           string `json:"python"`
	MultiTurn        bool   `json:"multi_turn"`
	// MaxTurns is verifiers' max_turns: 1 for a SingleTurnEnv, -1 for no limit.
	MaxTurns     int    `json:"max_turns"`
	SystemPrompt string `json:"system_prompt"`
	// Splits holds the number of rows of "train" and, when the environment
	// has one, "eval".
	Splits map[string]int `json:"splits"`
	// GroupRewards is set when the rubric has group reward functions: its
	// rollouts are scored a group at a time (ScoreGroup).
	GroupRewards bool `json:"group_rewards"`
	// Agent is set for a v1 taskset whose harness runs an agent program:
	// rollouts run HarnessCommand, whose model calls are the turns.
	Agent bool `json:"agent"`
}

// Row is one dataset row as verifiers formats it.
type Row struct {
	// ExampleID is the row's example_id (an int in verifiers; any JSON).
	ExampleID any            `json:"example_id,omitempty"`
	Prompt    []chat.Message `json:"prompt"`
	// Answer is usually a string; verifiers allows any value.
	Answer any            `json:"answer,omitempty"`
	Info   map[string]any `json:"info,omitempty"`
	Task   string         `json:"task,omitempty"`
}

type groupResult struct {
	Scores []*Score `json:"scores"`
}

type rowsResult struct {
	Total int   `json:"total"`
	Rows  []Row `json:"rows"`
}

// Reply is the environment's answer to one model turn.
type Reply struct {
	Messages []chat.Message `json:"messages"`
	Done     bool           `json:"done"`
	// Stop is verifiers' stop_condition when Done ("max_turns_reached", …).
	Stop string `json:"stop"`
}

// Score is the rubric's verdict on a finished rollout: verifiers'
// state["reward"] (the weighted sum of its reward functions) and
// state["metrics"] (each function's value by name).
type Score struct {
	Reward  float64            `json:"reward"`
	Metrics map[string]float64 `json:"metrics"`
}

// Error kinds the child reports.
const (
	KindMissingVerifiers = "missing_verifiers" // the python has no verifiers
	KindLoad             = "load"              // load_environment failed
	KindNoSplit          = "no_split"          // the environment has no such split
	KindProtocol         = "protocol"          // a malformed request
	KindEnv              = "env"               // the environment's code raised
	KindUnknownEpisode   = "unknown_episode"   // a reply for a state the child lost
	KindMissingModule    = "missing_module"    // the environment needs a module the python lacks
)

// ChildError is an error the child reported for one request.
type ChildError struct {
	Kind, Msg string
	// Missing is the module of a KindMissingModule error.
	Missing string
}

func (e *ChildError) Error() string { return e.Msg }

// decodeResponse parses one line from the child. A line that is not a
// response object (no id field, wrong types) is an error, never a panic:
// the child's stream is untrusted input.
func decodeResponse(line []byte) (response, error) {
	var r response
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return r, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return r, err
	}
	if r.ID == nil {
		if !r.OK && r.Error != "" {
			return r, &ChildError{Kind: r.Kind, Msg: r.Error}
		}
		return r, errors.New(`no "id" field`)
	}
	if !r.OK && r.Error == "" {
		r.Error = fmt.Sprintf("request failed (%s) without a message", orUnknown(r.Kind))
	}
	return r, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown kind"
	}
	return s
}
