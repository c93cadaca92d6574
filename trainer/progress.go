package trainer

import (
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress is the one progress bar of a run (step, reward, tokens/s, ETA)
// with a line of key metrics printed above it after each step. A nil
// writer draws nothing; a writer that is not a terminal (a log file, a
// pipe) gets the per-step lines without the bar.
type progress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func newProgress(w io.Writer, maxSteps, done int) *progress {
	if w == nil {
		return &progress{}
	}
	if f, ok := w.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return &progress{w: w}
	}
	bar := progressbar.NewOptions(maxSteps,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("train"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetWidth(24),
		progressbar.OptionThrottle(0),
		progressbar.OptionClearOnFinish(),
	)
	bar.Set(done)
	return &progress{w: w, bar: bar}
}

// stepDone prints the step's line and advances the bar.
func (p *progress) stepDone(step int, m map[string]float64) {
	if p.w == nil {
		return
	}
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintf(p.w, "step %4d  reward %.3f  loss %+.4f  grad_norm %.3f  entropy %.3f  clip %.3f  %6.0f tok/s  gen %.1fs score %.1fs train %.1fs\n",
		step, m["reward"], m["loss"], m["grad_norm"], m["entropy"], m["clip_ratio/region"], m["tokens_per_s"], m["time/generate"], m["time/score"], m["time/train"])
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("reward %.3f  %.0f tok/s", m["reward"], m["tokens_per_s"]))
		p.bar.Set(step)
	}
}

// note prints a line (a warning, an eval result) above the bar.
func (p *progress) note(format string, args ...any) {
	if p.w == nil {
		return
	}
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}
