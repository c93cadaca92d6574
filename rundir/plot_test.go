package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlotTitlesNameTheRun: a plot PNG is looked at away from its
// directory (W&B media, a report), so its title names the run: the
// training run's directory, and a GEPA run's (issue 27).
func TestPlotTitlesNameTheRun(t *testing.T) {
	run := filepath.Join(t.TempDir(), "gsm8k-3")
	os.MkdirAll(run, 0o755)
	os.WriteFile(filepath.Join(run, "metrics.jsonl"), []byte(`{"step": 1, "reward": 0.5}`+"\n"), 0o644)
	p, err := rewardsPlot(run, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Title.Text, "gsm8k-3") {
		t.Errorf("rewards.png title %q does not name the run", p.Title.Text)
	}
	if err := PlotRewards(run, 10); err != nil {
		t.Fatal(err)
	}
	p, err = bestScorePlot(runName(filepath.Join(run, "..", "wordle-gepa-1")), []int{0, 1}, []float64{0.2, 0.4})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Title.Text, "wordle-gepa-1") {
		t.Errorf("GEPA plot title %q does not name the run", p.Title.Text)
	}
}
