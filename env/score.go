package env

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/rubric"
)

// This file scores given completions with an environment's rubric, without
// a model: the Lab's "test the rubric independently" (`grpo env score`).

// ScoreRow is one completion to score. It reads two JSON layouts: that of
// testdata/verifiers_golden.jsonl (prompt and completion as chat
// messages, answer, info, args, env, name; other fields are ignored), and
// a simpler one where prompt and completion are text
// ({"completion": "<reversed_text>…</reversed_text>", "answer": "…"}), or
// completion a list of texts, one per assistant turn. A non-string answer
// is read as its JSON text (18 → "18").
type ScoreRow struct {
	Env  string `json:"env,omitempty"`
	Name string `json:"name,omitempty"`
	// Version is the environment version the row was scored for ("v0");
	// "" for the default. The caller builds the environment with it
	// (WithVersion), as it does with Args.
	Version    string         `json:"version,omitempty"`
	Args       map[string]any `json:"args,omitempty"`
	Prompt     []chat.Message `json:"prompt,omitempty"`
	Completion []chat.Message `json:"completion"`
	Answer     string         `json:"answer"`
	Info       map[string]any `json:"info,omitempty"`
}

// ParseScoreRow reads one JSON object in either layout.
func ParseScoreRow(line []byte) (ScoreRow, error) {
	var raw struct {
		Env        string          `json:"env"`
		Name       string          `json:"name"`
		Version    string          `json:"version"`
		Args       map[string]any  `json:"args"`
		Prompt     json.RawMessage `json:"prompt"`
		Completion json.RawMessage `json:"completion"`
		Answer     json.RawMessage `json:"answer"`
		Info       map[string]any  `json:"info"`
	}
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		return ScoreRow{}, fmt.Errorf("not a JSON object with completion, answer, …: %v", err)
	}
	row := ScoreRow{Env: raw.Env, Name: raw.Name, Version: raw.Version, Args: raw.Args, Info: raw.Info}
	var err error
	if row.Prompt, err = messagesField(raw.Prompt, "user"); err != nil {
		return ScoreRow{}, fmt.Errorf("prompt: %v", err)
	}
	if len(raw.Completion) == 0 || string(raw.Completion) == "null" {
		return ScoreRow{}, errors.New(`no "completion"; give the model's text, a list of texts (one per turn) or chat messages`)
	}
	if row.Completion, err = messagesField(raw.Completion, "assistant"); err != nil {
		return ScoreRow{}, fmt.Errorf("completion: %v", err)
	}
	if row.Answer, err = scoreAnswerText(raw.Answer); err != nil {
		return ScoreRow{}, fmt.Errorf("answer: %v", err)
	}
	return row, nil
}

// messagesField reads text (one message of role), a list of texts (each
// a message of role) or a list of chat messages.
func messagesField(raw json.RawMessage, role string) ([]chat.Message, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []chat.Message{{Role: role, Content: text}}, nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil {
		out := make([]chat.Message, len(texts))
		for i, t := range texts {
			out[i] = chat.Message{Role: role, Content: t}
		}
		return out, nil
	}
	var msgs []chat.Message
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, errors.New(`want text, a list of texts, or chat messages ([{"role": "assistant", "content": "…"}])`)
	}
	for i, m := range msgs {
		if m.Role == "" {
			return nil, fmt.Errorf("message %d has no role", i+1)
		}
	}
	return msgs, nil
}

func scoreAnswerText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", err
	}
	if n, ok := v.(json.Number); ok {
		return n.String(), nil
	}
	return string(bytes.TrimSpace(raw)), nil
}

// ScoreOptions choose how a row's turns are played.
type ScoreOptions struct {
	// Replay plays the assistant turns through the environment's harness
	// even when the row gives the environment's replies, replacing them
	// (and saying where they differed). Without it a completion that holds
	// replies is scored as given, as verifiers' rubric scores a saved
	// rollout; one of assistant turns only is always played.
	Replay bool
}

// ScoreResult is what the rubric gave one row.
type ScoreResult struct {
	// Reward is grpo's: the rubric's clamped weighted sum.
	Reward float64 `json:"reward"`
	// VerifiersReward is verifiers' unscaled weighted sum: Reward divided
	// by the environment's RewardScale (equal to Reward when it has none).
	VerifiersReward float64 `json:"verifiers_reward"`
	// Metrics are the rubric's sub-metrics, by verifiers' names, unscaled.
	Metrics map[string]float64 `json:"metrics"`
	Errors  []string           `json:"errors,omitempty"`
	// Played is set when the harness played the turns: the completion
	// scored, with the environment's replies.
	Played bool `json:"played"`
	// Completion is the completion scored (only when Played).
	Completion []chat.Message `json:"completion,omitempty"`
	Turns      int            `json:"turns"`
	// EpisodeDone: the harness ended the episode (false when the scripted
	// turns ran out first, as when a rollout hits max_tokens).
	EpisodeDone bool `json:"episode_done,omitempty"`
	// Unplayed counts scripted turns after the episode ended; they are not
	// scored.
	Unplayed int `json:"unplayed_turns,omitempty"`
	// ReplyDiffers names the first turn whose given reply differs from
	// the harness's (Replay only).
	ReplyDiffers string `json:"reply_differs,omitempty"`
}

// Score scores row with e (built from the row's args; scale is its Spec's
// RewardScale). The harness plays the row's assistant turns when the
// completion holds no replies, or always with opts.Replay.
func Score(ctx context.Context, e Environment, scale float64, row ScoreRow, opts ScoreOptions) (ScoreResult, error) {
	var res ScoreResult
	completion := row.Completion
	hasReplies := false
	for _, m := range completion {
		if m.Role != "assistant" {
			hasReplies = true
		}
	}
	if !hasReplies || opts.Replay {
		var err error
		completion, err = play(ctx, e, row, hasReplies, &res)
		if err != nil {
			return res, err
		}
	} else {
		for _, m := range completion {
			if m.Role == "assistant" {
				res.Turns++
			}
		}
	}
	r := e.Rubric().Score(ctx, rubric.Rollout{Prompt: row.Prompt, Completion: completion, Answer: row.Answer, Info: row.Info})
	res.Reward, res.Metrics, res.Errors = r.Reward, r.Metrics, r.Errors
	res.VerifiersReward = r.Reward
	if scale != 0 {
		res.VerifiersReward = r.Reward / scale
	}
	return res, nil
}

// play sends each assistant turn of row to a new episode and collects the
// completion with the environment's replies; compare says to check them
// against the replies the row gave.
func play(ctx context.Context, e Environment, row ScoreRow, compare bool, res *ScoreResult) ([]chat.Message, error) {
	res.Played = true
	ep := e.NewEpisode(Example{Prompt: row.Prompt, Answer: row.Answer, Info: row.Info})
	var turns []int // indices of the assistant messages
	for i, m := range row.Completion {
		if m.Role == "assistant" {
			turns = append(turns, i)
		}
	}
	var out []chat.Message
	for k, i := range turns {
		out = append(out, row.Completion[i])
		res.Turns++
		reply, done, err := ep.Respond(ctx, row.Completion[i].Content)
		if err != nil {
			return nil, fmt.Errorf("turn %d: the environment failed: %v", k+1, err)
		}
		out = append(out, reply...)
		if given := givenReply(row.Completion, i); compare && res.ReplyDiffers == "" && (len(given) > 0 || len(reply) > 0) && !reflect.DeepEqual(given, reply) {
			res.ReplyDiffers = "turn " + strconv.Itoa(k+1)
		}
		if done {
			res.EpisodeDone = true
			res.Unplayed = len(turns) - k - 1
			break
		}
	}
	res.Completion = out
	return out, nil
}

// givenReply is the run of non-assistant messages after message i.
func givenReply(msgs []chat.Message, i int) []chat.Message {
	j := i + 1
	for j < len(msgs) && msgs[j].Role != "assistant" {
		j++
	}
	if j == i+1 {
		return nil
	}
	return msgs[i+1 : j]
}
