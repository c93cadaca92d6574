package rubric

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/grpo-dev/grpo/chat"
)

// The wire format shared by Command and HTTP rubrics.
//
// Request: one JSON object, the Rollout:
//
//	{"prompt": [{"role": "user", "content": "..."}],
//	 "completion": [{"role": "assistant", "content": "..."}],
//	 "answer": "...", "info": {...}}
//
// Reply: either a bare number ("0.5") or an object
// {"reward": 0.5, "metrics": {"name": 1.0, ...}}.

// encodeRollout writes r as the request object; nil slices and maps become
// [] and {} so that Python code can iterate them without None checks.
func encodeRollout(r Rollout) ([]byte, error) {
	if r.Prompt == nil {
		r.Prompt = []chat.Message{}
	}
	if r.Completion == nil {
		r.Completion = []chat.Message{}
	}
	if r.Info == nil {
		r.Info = map[string]any{}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("rollout info is not JSON-encodable: %v", err)
	}
	return b, nil
}

type replyObject struct {
	Reward  *float64           `json:"reward"`
	Metrics map[string]float64 `json:"metrics"`
}

// parseReply reads a reward function's reply; the error says what was wrong
// and what a valid reply looks like.
func parseReply(out []byte) (Score, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return Score{}, fmt.Errorf(`empty reply; print a number such as 0.5 or {"reward": 0.5}`)
	}
	if out[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.DisallowUnknownFields()
		var obj replyObject
		if err := dec.Decode(&obj); err != nil {
			return Score{}, fmt.Errorf(`reply %s is not {"reward": number, "metrics": {name: number}}: %v`, preview(out), err)
		}
		if dec.More() {
			return Score{}, fmt.Errorf("reply %s has text after the JSON object; print one object", preview(out))
		}
		if obj.Reward == nil {
			return Score{}, fmt.Errorf(`reply %s has no "reward" key`, preview(out))
		}
		return Score{Value: *obj.Reward, Metrics: obj.Metrics}, nil
	}
	v, err := strconv.ParseFloat(string(out), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return Score{}, fmt.Errorf(`reply %s is not a finite number; print a number such as 0.5 or {"reward": 0.5}`, preview(out))
	}
	return Score{Value: v}, nil
}

// preview quotes the start of a reply for an error message.
func preview(b []byte) string {
	const max = 80
	r := []rune(string(b))
	if len(r) > max {
		return strconv.Quote(string(r[:max])) + "…"
	}
	return strconv.Quote(string(r))
}
