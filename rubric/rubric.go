package rubric

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
)

// Score is the result of one reward function on one rollout: a value (any
// finite number; the Rubric's weighted sum is what gets clamped) and optional
// named sub-metrics for logging.
type Score struct {
	Value   float64
	Metrics map[string]float64
}

// Func is a reward function. It returns an error, never a made-up score,
// when it cannot judge the rollout (an external command crashed, a server
// was down); the Rubric turns that error into a 0 and a counted metric.
type Func func(ctx context.Context, r Rollout) (Score, error)

// Reward adapts a plain Go scoring function that cannot fail.
func Reward(f func(r Rollout) float64) Func {
	return func(_ context.Context, r Rollout) (Score, error) {
		return Score{Value: f(r)}, nil
	}
}

// Term is one weighted reward function of a Rubric. Name labels its metrics.
type Term struct {
	Name   string
	Weight float64
	Func   Func
}

// Rubric turns a rollout into a reward in [0, 1]: the weighted sum of its
// terms, clamped. It is safe for concurrent use if its Funcs are.
type Rubric struct {
	terms []Term
}

var termName = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)

// Weighted builds a Rubric from terms. Names must be unique and made of
// letters, digits and _.:- (they become metric keys); weights must be finite.
// A zero weight is allowed: the term is then logged but does not count.
func Weighted(terms ...Term) (*Rubric, error) {
	if len(terms) == 0 {
		return nil, errors.New("rubric: no terms; give at least one Term{Name, Weight, Func}")
	}
	seen := map[string]bool{}
	for i, t := range terms {
		switch {
		case !termName.MatchString(t.Name):
			return nil, fmt.Errorf("rubric: term %d has name %q; use letters, digits and _.:- only", i, t.Name)
		case seen[t.Name]:
			return nil, fmt.Errorf("rubric: term name %q appears twice; names must be unique", t.Name)
		case math.IsNaN(t.Weight) || math.IsInf(t.Weight, 0):
			return nil, fmt.Errorf("rubric: term %q has weight %v; use a finite number", t.Name, t.Weight)
		case t.Func == nil:
			return nil, fmt.Errorf("rubric: term %q has no Func", t.Name)
		}
		seen[t.Name] = true
	}
	return &Rubric{terms: append([]Term(nil), terms...)}, nil
}

// Result is a rollout's reward with its metrics.
type Result struct {
	// Reward is the clamped weighted sum, always in [0, 1].
	Reward float64
	// Metrics holds, per term, "<name>" (the unweighted value, 0 on error)
	// and "<name>/<metric>" (the term's sub-metrics); "errors/<name>" is 1
	// when the term failed; "warnings/clamped" is 1 when the weighted sum
	// fell outside [0, 1]. Summed over rollouts they count events.
	Metrics map[string]float64
	// Errors holds one line per failed term, "<name>: <reason>".
	Errors []string
	// Warnings holds one line per warning, e.g. the clamp.
	Warnings []string
}

// Score evaluates every term on r. A term that returns an error, panics, or
// returns NaN or ±Inf scores 0 and is counted; Score itself never fails.
// Cancelling ctx makes the pending external terms fail fast (and count).
func (rb *Rubric) Score(ctx context.Context, r Rollout) Result {
	res := Result{Metrics: make(map[string]float64, 2*len(rb.terms))}
	sum := 0.0
	for _, t := range rb.terms {
		s, err := callSafely(ctx, t.Func, r)
		if err == nil && (math.IsNaN(s.Value) || math.IsInf(s.Value, 0)) {
			err = fmt.Errorf("returned %v; a reward must be a finite number", s.Value)
		}
		if err != nil {
			res.Metrics[t.Name] = 0
			res.Metrics["errors/"+t.Name] = 1
			res.Errors = append(res.Errors, t.Name+": "+oneLine(err.Error()))
			continue
		}
		res.Metrics[t.Name] = s.Value
		for k, v := range s.Metrics {
			res.Metrics[t.Name+"/"+k] = v
		}
		sum += t.Weight * s.Value
	}
	var clamped bool
	res.Reward, clamped = Clamp(sum)
	if clamped {
		res.Metrics["warnings/clamped"] = 1
		res.Warnings = append(res.Warnings, fmt.Sprintf("weighted reward %v clamped to %v; check the terms' weights", sum, res.Reward))
	}
	return res
}

// ScoreAll scores rollouts with up to workers concurrent goroutines (at
// least 1) and returns the results in input order.
func (rb *Rubric) ScoreAll(ctx context.Context, rs []Rollout, workers int) []Result {
	out := make([]Result, len(rs))
	if workers < 1 {
		workers = 1
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = rb.Score(ctx, rs[i])
			}
		}()
	}
	for i := range rs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// Clamp limits x to [0, 1] and reports whether it had to. NaN becomes 0.
func Clamp(x float64) (float64, bool) {
	switch {
	case math.IsNaN(x) || x < 0:
		return 0, true
	case x > 1:
		return 1, true
	}
	return x, false
}

// callSafely runs f, turning a panic into an error so that one bad reward
// function cannot kill a training run.
func callSafely(ctx context.Context, f Func, r Rollout) (s Score, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v (at %s)", p, panicSite(debug.Stack()))
		}
	}()
	return f(ctx, r)
}

// panicSite picks the first stack frame outside the runtime, which is
// where the user's function panicked.
func panicSite(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	for i := 0; i+1 < len(lines); i++ {
		fn := strings.TrimSpace(lines[i])
		if strings.HasPrefix(fn, "panic(") {
			// The frame after panic's own two lines is the panicking function.
			if i+3 < len(lines) {
				site, _, _ := strings.Cut(strings.TrimSpace(lines[i+3]), " +0x")
				return site
			}
		}
	}
	return "unknown location"
}

// oneLine collapses an error message to a single line of bounded length, so
// metrics logs stay one event per line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 300
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}
