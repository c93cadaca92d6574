package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/grpo-dev/grpo/chat"
)

// Row is one rollout of an evaluation, as a line of the results JSONL.
type Row struct {
	Env          string `json:"env"`
	ExampleID    string `json:"example_id"`
	ExampleIndex int    `json:"example_index"`
	// Rollout is the rollout's index among its example's k.
	Rollout          int                `json:"rollout"`
	Prompt           []chat.Message     `json:"prompt"`
	Completion       []chat.Message     `json:"completion"`
	Answer           string             `json:"answer"`
	Reward           float64            `json:"reward"`
	Metrics          map[string]float64 `json:"metrics"`
	Errors           []string           `json:"errors"`
	FinishReason     string             `json:"finish_reason"`
	Turns            int                `json:"turns"`
	Truncated        bool               `json:"truncated"`
	TruncatedBy      string             `json:"truncated_by,omitempty"` // rollout.TruncatedMaxTokens or TruncatedContext
	CompletionTokens int                `json:"completion_tokens"`
	Info             map[string]any     `json:"info,omitempty"`
}

// Rows turns r's trajectories into results rows, in order: example i's
// rollout j is row i*k+j.
func (r Result) Rows() []Row { return r.rowsFrom(0, 0) }

// rowsFrom is Rows for one pass of a larger eval whose first example is
// example exOff and whose first rollout is rollout roOff of its example.
func (r Result) rowsFrom(exOff, roOff int) []Row {
	k := 1
	if r.Examples > 0 {
		k = max(1, r.Rollouts/r.Examples)
	}
	rows := make([]Row, len(r.Trajectories))
	for i, t := range r.Trajectories {
		metrics := map[string]float64{}
		for name, v := range t.ToolMetrics {
			metrics[name] = v
		}
		for name, v := range t.Metrics {
			if !math.IsNaN(v) && !math.IsInf(v, 0) { // JSON has no NaN
				metrics[name] = v
			}
		}
		errs := t.Errors
		if errs == nil {
			errs = []string{}
		}
		completion := t.Messages
		if completion == nil {
			completion = []chat.Message{}
		}
		rows[i] = Row{Env: r.Env, ExampleID: t.ID, ExampleIndex: exOff + i/k, Rollout: roOff + i%k,
			Prompt: t.Prompt, Completion: completion, Answer: t.Answer, Reward: t.Reward,
			Metrics: metrics, Errors: errs, FinishReason: t.FinishReason, Turns: t.Turns,
			Truncated: t.Truncated, TruncatedBy: t.TruncatedBy, CompletionTokens: len(t.Tokens), Info: t.Info}
	}
	return rows
}

// WriteRows writes rows as JSON lines.
func WriteRows(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range rows {
		if err := enc.Encode(&rows[i]); err != nil {
			return fmt.Errorf("results row %d: %w", i, err)
		}
	}
	return nil
}
