package main

import (
	"fmt"
	"io"
	"os"

	"github.com/grpo-dev/grpo/trainer"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// trainBar draws a run's one progress bar (step, reward, tokens/s, ETA)
// with the trainer's lines (one per step, warnings, eval results) printed
// above it. Where w is not a terminal (a log file, a pipe) only the lines
// are written.
type trainBar struct {
	w   io.Writer
	tty bool
	bar *progressbar.ProgressBar
}

// newTrainProgress returns the trainer.WithProgressEvents callback that
// draws on w.
func newTrainProgress(w io.Writer) func(trainer.ProgressEvent) {
	f, ok := w.(*os.File)
	return (&trainBar{w: w, tty: ok && term.IsTerminal(int(f.Fd()))}).draw
}

func (p *trainBar) draw(e trainer.ProgressEvent) {
	switch e.Kind {
	case trainer.ProgressStart:
		if !p.tty {
			return
		}
		p.bar = progressbar.NewOptions(e.MaxSteps,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription("train"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetWidth(24),
			progressbar.OptionThrottle(0),
			progressbar.OptionClearOnFinish(),
		)
		p.bar.Set(e.Step)
	case trainer.ProgressStep, trainer.ProgressNote:
		if p.bar != nil {
			p.bar.Clear()
		}
		fmt.Fprintln(p.w, e.Line)
		if p.bar != nil && e.Kind == trainer.ProgressStep {
			p.bar.Describe(fmt.Sprintf("reward %.3f  %.0f tok/s", e.Metrics["reward"], e.Metrics["tokens_per_s"]))
			p.bar.Set(e.Step)
		}
	case trainer.ProgressEnd:
		if p.bar != nil {
			p.bar.Finish()
			p.bar = nil
		}
	}
}
