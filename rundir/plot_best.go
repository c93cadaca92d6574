package rundir

import (
	"image/color"
	"io"
	"path/filepath"

	"github.com/grpo-dev/grpo/internal/atomicfile"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// PlotBestScore draws a GEPA run's best mean validation score after each
// iteration (a step line: the best only changes when a better prompt is
// accepted) into the PNG file path, atomically.
func PlotBestScore(path string, iterations []int, best []float64) error {
	p, err := bestScorePlot(runName(filepath.Dir(path)), iterations, best)
	if err != nil {
		return err
	}
	png, err := p.WriterTo(7*vg.Inch, 4*vg.Inch, "png")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		_, err := png.WriteTo(w)
		return err
	})
}

// bestScorePlot is PlotBestScore's plot, titled with the run's name (the
// directory the PNG is written in), as the training plot is.
func bestScorePlot(run string, iterations []int, best []float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "GEPA best prompt's validation score: " + run
	p.X.Label.Text = "iteration"
	p.Y.Label.Text = "mean validation score"
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	xy := make(plotter.XYs, len(best))
	for i := range best {
		xy[i] = plotter.XY{X: float64(iterations[i]), Y: best[i]}
	}
	if len(xy) > 0 {
		line, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, err
		}
		line.StepStyle = plotter.PostStep
		line.Color = color.RGBA{R: 20, G: 60, B: 160, A: 255}
		line.Width = vg.Points(2)
		pts.Color = line.Color
		pts.Radius = vg.Points(2)
		p.Add(line, pts)
	}
	return p, nil
}
