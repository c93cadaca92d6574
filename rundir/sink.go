package rundir

import (
	"errors"
	"math"
)

// Sink receives a run's metrics as the trainer makes them: one call per
// step, per evaluation and at the end. Rows are what metrics.jsonl and
// eval.jsonl hold: "step" and the numbers by name.
type Sink interface {
	Step(row map[string]any) error
	Eval(row map[string]any) error
	// End closes the sink; status is Finished, Interrupted or Failed.
	End(status string) error
}

// Sinks fans every call out to each sink (metrics.jsonl and eval.jsonl,
// the TensorBoard events file, W&B), in order, so the trainer has one call
// per event. The first error is returned after every sink has had the row.
type Sinks struct {
	sinks []Sink
	ended bool
}

// Step logs one training step.
func (s *Sinks) Step(row map[string]any) error {
	var errs []error
	for _, k := range s.sinks {
		errs = append(errs, k.Step(row))
	}
	return errors.Join(errs...)
}

// Eval logs one evaluation.
func (s *Sinks) Eval(row map[string]any) error {
	var errs []error
	for _, k := range s.sinks {
		errs = append(errs, k.Eval(row))
	}
	return errors.Join(errs...)
}

// End closes every sink once; later calls do nothing, so a deferred End
// after the loop's own is harmless.
func (s *Sinks) End(status string) error {
	if s == nil || s.ended {
		return nil
	}
	s.ended = true
	var errs []error
	for _, k := range s.sinks {
		errs = append(errs, k.End(status))
	}
	return errors.Join(errs...)
}

// jsonlSink is metrics.jsonl and eval.jsonl.
type jsonlSink struct{ d *Dir }

func (j jsonlSink) Step(row map[string]any) error { return j.d.AppendJSONL("metrics.jsonl", row) }
func (j jsonlSink) Eval(row map[string]any) error { return j.d.AppendJSONL("eval.jsonl", row) }
func (j jsonlSink) End(string) error              { return nil }

// scalars splits a row into its step and its finite numbers.
func scalars(row map[string]any, prefix string) (int, map[string]float64) {
	step := 0
	out := map[string]float64{}
	for k, v := range row {
		if k == "step" {
			switch s := v.(type) {
			case int:
				step = s
			case float64:
				step = int(s)
			}
			continue
		}
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case float32:
			f = float64(x)
		case int:
			f = float64(x)
		default:
			continue
		}
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			out[prefix+k] = f
		}
	}
	return step, out
}
