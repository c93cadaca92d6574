package gepa

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// scriptedStudent scores prompts with a deterministic Go function and
// counts every rollout it plays: the metric calls a run must account for.
type scriptedStudent struct {
	nTrain, nVal int
	score        func(prompt string, split Split, id int) float64
	mu           sync.Mutex
	calls        int
	requests     []Request
}

func (s *scriptedStudent) TrainSize() int { return s.nTrain }
func (s *scriptedStudent) ValSize() int   { return s.nVal }

func (s *scriptedStudent) Evaluate(ctx context.Context, r Request) ([]Rollout, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls += len(r.IDs)
	s.requests = append(s.requests, r)
	out := make([]Rollout, len(r.IDs))
	for i, id := range r.IDs {
		v := s.score(r.Prompt, r.Split, id)
		out[i] = Rollout{Input: fmt.Sprintf("%s task %d", r.Split, id), Output: fmt.Sprintf("answer of %q", r.Prompt), Score: v,
			Feedback: fmt.Sprintf("reward %.2f", v)}
	}
	return out, nil
}

// table is a student whose scores are listed per prompt.
func table(nTrain, nVal int, scores map[string][2][]float64) *scriptedStudent {
	return &scriptedStudent{nTrain: nTrain, nVal: nVal, score: func(p string, split Split, id int) float64 {
		row, ok := scores[p]
		if !ok {
			panic("scripted student: no scores for prompt " + p)
		}
		if split == Train {
			return row[0][id]
		}
		return row[1][id]
	}}
}

// scriptedTeacher answers from a function of the reflection prompt it is
// shown, and keeps the prompts.
type scriptedTeacher struct {
	reply   func(prompt string, call int) string
	prompts []string
}

func (t *scriptedTeacher) Reflect(ctx context.Context, prompt string, seed uint64) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	t.prompts = append(t.prompts, prompt)
	return t.reply(prompt, len(t.prompts)-1), nil
}

// sequence replies with the given instructions in turn, fenced, the last
// one again when they run out.
func sequence(instrs ...string) *scriptedTeacher {
	return &scriptedTeacher{reply: func(_ string, call int) string {
		return "Here is a better one:\n```\n" + instrs[min(call, len(instrs)-1)] + "\n```\n"
	}}
}

// currentInstruction is the instruction a reflection prompt shows.
func currentInstruction(prompt string) string {
	_, rest, _ := strings.Cut(prompt, "```\n")
	cur, _, _ := strings.Cut(rest, "\n```")
	return cur
}
