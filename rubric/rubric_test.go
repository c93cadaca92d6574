package rubric

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/chat"
)

func constant(v float64) Func { return Reward(func(Rollout) float64 { return v }) }

func TestWeightedSumAndMetrics(t *testing.T) {
	rb, err := Weighted(
		Term{Name: "correct", Weight: 0.8, Func: func(_ context.Context, r Rollout) (Score, error) {
			return Score{Value: 1, Metrics: map[string]float64{"parsed": 1}}, nil
		}},
		Term{Name: "format", Weight: 0.2, Func: constant(0.5)},
		Term{Name: "logged", Weight: 0, Func: constant(7)},
	)
	if err != nil {
		t.Fatal(err)
	}
	res := rb.Score(t.Context(), SingleTurn("q", "a", "a"))
	if want := 0.8*1 + 0.2*0.5; math.Abs(res.Reward-want) > 1e-15 {
		t.Errorf("reward %v, want %v", res.Reward, want)
	}
	want := map[string]float64{"correct": 1, "correct/parsed": 1, "format": 0.5, "logged": 7}
	if len(res.Metrics) != len(want) {
		t.Errorf("metrics %v, want %v", res.Metrics, want)
	}
	for k, v := range want {
		if res.Metrics[k] != v {
			t.Errorf("metric %s = %v, want %v", k, res.Metrics[k], v)
		}
	}
	if len(res.Errors)+len(res.Warnings) != 0 {
		t.Errorf("unexpected errors %v warnings %v", res.Errors, res.Warnings)
	}
}

func TestClampWarns(t *testing.T) {
	for _, c := range []struct{ sum, want float64 }{{1.5, 1}, {-0.25, 0}} {
		rb, _ := Weighted(Term{Name: "x", Weight: 1, Func: constant(c.sum)})
		res := rb.Score(t.Context(), Rollout{})
		if res.Reward != c.want || res.Metrics["warnings/clamped"] != 1 || len(res.Warnings) != 1 {
			t.Errorf("sum %v: reward %v metrics %v warnings %v", c.sum, res.Reward, res.Metrics, res.Warnings)
		}
	}
	if v, clamped := Clamp(math.NaN()); v != 0 || !clamped {
		t.Errorf("Clamp(NaN) = %v, %v", v, clamped)
	}
	if v, clamped := Clamp(0.3); v != 0.3 || clamped {
		t.Errorf("Clamp(0.3) = %v, %v", v, clamped)
	}
}

// TestFailingTermsScoreZero: an error, a panic and a NaN each cost only their
// own term, are counted, and leave one line each.
func TestFailingTermsScoreZero(t *testing.T) {
	rb, err := Weighted(
		Term{Name: "ok", Weight: 0.5, Func: constant(1)},
		Term{Name: "err", Weight: 0.5, Func: func(context.Context, Rollout) (Score, error) {
			return Score{Value: 1}, errors.New("server down\nretry later")
		}},
		Term{Name: "panics", Weight: 0.5, Func: Reward(func(r Rollout) float64 {
			var m map[string]int
			m["boom"]++ // nil map write
			return 1
		})},
		Term{Name: "nan", Weight: 0.5, Func: constant(math.NaN())},
	)
	if err != nil {
		t.Fatal(err)
	}
	res := rb.Score(t.Context(), Rollout{})
	if res.Reward != 0.5 {
		t.Errorf("reward %v, want 0.5 (only the ok term counts)", res.Reward)
	}
	for _, name := range []string{"err", "panics", "nan"} {
		if res.Metrics["errors/"+name] != 1 || res.Metrics[name] != 0 {
			t.Errorf("term %s: metrics %v", name, res.Metrics)
		}
	}
	if len(res.Errors) != 3 {
		t.Fatalf("errors %q, want 3", res.Errors)
	}
	for _, e := range res.Errors {
		if strings.Contains(e, "\n") {
			t.Errorf("error %q spans lines", e)
		}
	}
	if !strings.Contains(res.Errors[1], "panics: panic: assignment to entry in nil map (at ") ||
		!strings.Contains(res.Errors[1], "rubric_test.go:") {
		t.Errorf("panic error %q should name the panic and its file:line", res.Errors[1])
	}
}

func TestWeightedRejectsBadTerms(t *testing.T) {
	f := constant(1)
	bad := map[string][]Term{
		"no terms":   nil,
		"empty name": {{Name: "", Weight: 1, Func: f}},
		"space":      {{Name: "a b", Weight: 1, Func: f}},
		"duplicate":  {{Name: "a", Weight: 1, Func: f}, {Name: "a", Weight: 1, Func: f}},
		"nan weight": {{Name: "a", Weight: math.NaN(), Func: f}},
		"inf weight": {{Name: "a", Weight: math.Inf(1), Func: f}},
		"nil func":   {{Name: "a", Weight: 1}},
	}
	for what, terms := range bad {
		if _, err := Weighted(terms...); err == nil {
			t.Errorf("%s: Weighted accepted it", what)
		} else if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "rubric: ") {
			t.Errorf("%s: error %q should be one line starting with rubric:", what, err)
		}
	}
}

func TestScoreAllKeepsOrder(t *testing.T) {
	rb, _ := Weighted(Term{Name: "ratio", Weight: 1, Func: Reward(func(r Rollout) float64 {
		return Ratio(r.LastAssistant(), r.Answer)
	})})
	var rs []Rollout
	for _, s := range []string{"abcd", "abce", "zzzz", "", "abcd"} {
		rs = append(rs, SingleTurn("q", s, "abcd"))
	}
	out := rb.ScoreAll(t.Context(), rs, 3)
	want := []float64{1, 0.75, 0, 0, 1}
	for i, r := range out {
		if r.Reward != want[i] {
			t.Errorf("rollout %d: reward %v, want %v", i, r.Reward, want[i])
		}
	}
}

func TestRolloutAccessors(t *testing.T) {
	r := Rollout{
		Prompt: []chat.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "q1"}, {Role: "user", Content: "q2"}},
		Completion: []chat.Message{
			{Role: "assistant", Content: "a1"}, {Role: "user", Content: "env"}, {Role: "assistant", Content: "a2"},
		},
	}
	if r.Question() != "q2" || r.LastAssistant() != "a2" || strings.Join(r.AssistantTurns(), ",") != "a1,a2" {
		t.Errorf("Question %q LastAssistant %q AssistantTurns %q", r.Question(), r.LastAssistant(), r.AssistantTurns())
	}
	if (Rollout{}).LastAssistant() != "" || (Rollout{}).Question() != "" {
		t.Error("empty rollout accessors should return empty strings")
	}
}
