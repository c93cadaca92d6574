package trainer

import (
	"bytes"
	"testing"
)

// TestProgressLinesAndEvents: WithProgress gets the step and note lines as
// plain text, and WithProgressEvents the same lines in events that say
// where the run stands.
func TestProgressLinesAndEvents(t *testing.T) {
	var lines bytes.Buffer
	var events []ProgressEvent
	p := newProgress(&lines, func(e ProgressEvent) { events = append(events, e) }, 10, 2)
	m := map[string]float64{"reward": 0.5, "loss": -0.01, "grad_norm": 0.25, "entropy": 1.5, "clip_ratio/region": 0.125,
		"tokens_per_s": 1234, "time/generate": 1.25, "time/score": 0.5, "time/train": 2}
	p.note("warning: %s", "all rewards equal")
	p.stepDone(3, m)
	p.finish()
	p.finish()
	want := "warning: all rewards equal\n" +
		"step    3  reward 0.500  loss -0.0100  grad_norm 0.250  entropy 1.500  clip 0.125    1234 tok/s  gen 1.2s score 0.5s train 2.0s\n"
	if lines.String() != want {
		t.Fatalf("lines\n%q\nwant\n%q", lines.String(), want)
	}
	kinds := []ProgressKind{ProgressStart, ProgressNote, ProgressStep, ProgressEnd}
	steps := []int{2, 2, 3, 3}
	if len(events) != len(kinds) {
		t.Fatalf("events %+v, want start, note, step, end (the end once)", events)
	}
	for i, e := range events {
		if e.Kind != kinds[i] || e.Step != steps[i] || e.MaxSteps != 10 {
			t.Errorf("event %d: %+v, want kind %d at step %d of 10", i, e, kinds[i], steps[i])
		}
	}
	if events[2].Metrics["reward"] != 0.5 || events[2].Line+"\n" != want[len("warning: all rewards equal\n"):] {
		t.Errorf("step event %+v", events[2])
	}
}
