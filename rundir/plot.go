package rundir

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"

	"github.com/grpo-dev/grpo/internal/atomicfile"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// PlotRewards draws the per-step mean reward (and its running mean over
// window steps) and the eval reward from metrics.jsonl and eval.jsonl into
// rewards.png of the run directory.
func PlotRewards(runDir string, window int) error {
	p, err := rewardsPlot(runDir, window)
	if err != nil {
		return err
	}
	png, err := p.WriterTo(7*vg.Inch, 4*vg.Inch, "png")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(runDir, "rewards.png"), 0o644, func(w io.Writer) error {
		_, err := png.WriteTo(w)
		return err
	})
}

// rewardsPlot is PlotRewards' plot, titled with the run's name: the
// PNG travels alone (W&B media, a chat, a report), where "reward" says
// nothing about which run it is.
func rewardsPlot(runDir string, window int) (*plot.Plot, error) {
	metrics, err := ReadJSONL(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		return nil, err
	}
	evals, err := ReadJSONL(filepath.Join(runDir, "eval.jsonl"))
	if err != nil {
		return nil, err
	}
	p := plot.New()
	p.Title.Text = "reward: " + runName(runDir)
	p.X.Label.Text = "step"
	p.Y.Label.Text = "mean reward"
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	train := series(metrics, "reward")
	if len(train) > 0 {
		pts, err := plotter.NewScatter(train)
		if err != nil {
			return nil, err
		}
		pts.Color = color.RGBA{R: 120, G: 160, B: 220, A: 255}
		pts.Radius = vg.Points(1.5)
		p.Add(pts)
		p.Legend.Add("train (per step)", pts)
		smooth, err := plotter.NewLine(runningMean(train, window))
		if err != nil {
			return nil, err
		}
		smooth.Color = color.RGBA{R: 20, G: 60, B: 160, A: 255}
		smooth.Width = vg.Points(2)
		p.Add(smooth)
		p.Legend.Add(fmt.Sprintf("train (mean of %d)", window), smooth)
	}
	if ev := series(evals, "reward"); len(ev) > 0 {
		line, pts, err := plotter.NewLinePoints(ev)
		if err != nil {
			return nil, err
		}
		line.Color = color.RGBA{R: 200, G: 60, B: 30, A: 255}
		pts.Color = line.Color
		p.Add(line, pts)
		p.Legend.Add("eval", line, pts)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	return p, nil
}

// runName is the run directory's own name (runs/gsm8k-3 → gsm8k-3), the
// name grpo runs list shows.
func runName(runDir string) string {
	if abs, err := filepath.Abs(runDir); err == nil {
		runDir = abs
	}
	return filepath.Base(runDir)
}

func series(rows []map[string]any, key string) plotter.XYs {
	var xy plotter.XYs
	for _, r := range rows {
		s, ok1 := r["step"].(float64)
		v, ok2 := r[key].(float64)
		if ok1 && ok2 {
			xy = append(xy, plotter.XY{X: s, Y: v})
		}
	}
	return xy
}

func runningMean(xy plotter.XYs, window int) plotter.XYs {
	window = max(window, 1)
	out := make(plotter.XYs, len(xy))
	sum := 0.0
	for i := range xy {
		sum += xy[i].Y
		if i >= window {
			sum -= xy[i-window].Y
		}
		out[i] = plotter.XY{X: xy[i].X, Y: sum / float64(min(i+1, window))}
	}
	return out
}
