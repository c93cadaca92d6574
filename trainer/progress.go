package trainer

import (
	"fmt"
	"io"
)

// ProgressEvent is one thing a run reports as it goes, for a display to
// draw; the CLI's progress bar is drawn from these (WithProgressEvents).
type ProgressEvent struct {
	Kind ProgressKind
	// Step is the last completed step; on ProgressStart the one the run
	// continues after (0 unless resumed).
	Step     int
	MaxSteps int
	// Line is the text WithProgress prints for ProgressStep and
	// ProgressNote, without the newline.
	Line string
	// Metrics are the step's numbers (ProgressStep only), as in StepResult.
	Metrics map[string]float64
}

// ProgressKind says what a ProgressEvent reports.
type ProgressKind int

const (
	// ProgressStart: the model is loaded and the first step is about to run.
	ProgressStart ProgressKind = iota
	// ProgressStep: a step finished; Line is its one-line summary.
	ProgressStep
	// ProgressNote: a line for the user between steps (a warning, an
	// eval result).
	ProgressNote
	// ProgressEnd: the loop ended, finished, interrupted or failed.
	ProgressEnd
)

// progress reports a run's progress to the WithProgress writer as plain
// lines and to the WithProgressEvents callback; either may be absent.
type progress struct {
	w        io.Writer
	events   func(ProgressEvent)
	maxSteps int
	step     int
	finished bool
}

func newProgress(w io.Writer, events func(ProgressEvent), maxSteps, done int) *progress {
	p := &progress{w: w, events: events, maxSteps: maxSteps, step: done}
	p.emit(ProgressEvent{Kind: ProgressStart})
	return p
}

// stepLine is the summary of a step the user reads.
func stepLine(step int, m map[string]float64) string {
	return fmt.Sprintf("step %4d  reward %.3f  loss %+.4f  grad_norm %.3f  entropy %.3f  clip %.3f  %6.0f tok/s  gen %.1fs score %.1fs train %.1fs",
		step, m["reward"], m["loss"], m["grad_norm"], m["entropy"], m["clip_ratio/region"], m["tokens_per_s"], m["time/generate"], m["time/score"], m["time/train"])
}

func (p *progress) stepDone(step int, m map[string]float64) {
	p.stepDoneLine(step, m, stepLine(step, m))
}

// stepDoneLine reports a step with its line as given (stepLine plus what
// the step needs to say, such as its errors).
func (p *progress) stepDoneLine(step int, m map[string]float64, line string) {
	p.step = step
	p.emit(ProgressEvent{Kind: ProgressStep, Line: line, Metrics: m})
}

// note prints a line (a warning, an eval result) between steps.
func (p *progress) note(format string, args ...any) {
	p.emit(ProgressEvent{Kind: ProgressNote, Line: fmt.Sprintf(format, args...)})
}

func (p *progress) finish() {
	if !p.finished {
		p.finished = true
		p.emit(ProgressEvent{Kind: ProgressEnd})
	}
}

func (p *progress) emit(e ProgressEvent) {
	e.Step, e.MaxSteps = p.step, p.maxSteps
	if p.w != nil && e.Line != "" {
		fmt.Fprintln(p.w, e.Line)
	}
	if p.events != nil {
		p.events(e)
	}
}
