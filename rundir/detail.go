package rundir

import (
	"os"
	"path/filepath"
	"time"

	"github.com/grpo-dev/grpo/config"
)

// Detail is Inspect plus what `grpo runs status` shows.
type Detail struct {
	Info
	// Config is the run's config.toml, nil when it does not parse
	// (ConfigErr says why).
	Config    *config.Config
	ConfigErr error
	// Summary holds the first and last 10% rewards (valid when Steps > 0).
	Summary Summary
	// Latest is the last step's metrics.
	Latest map[string]float64
	// Checkpoints are the complete checkpoints' steps.
	Checkpoints []int
	// Adapter and Plot are paths, "" when the run has not written them.
	Adapter, Plot string
}

// InspectDetail reads everything `grpo runs status` shows.
func InspectDetail(path string, now time.Time) (Detail, error) {
	info, err := Inspect(path, now)
	if err != nil {
		return Detail{}, err
	}
	d := Detail{Info: info, Latest: map[string]float64{}}
	d.Config, d.ConfigErr = config.Load(filepath.Join(path, "config.toml"))
	ckDir := "checkpoints"
	if d.Config != nil {
		ckDir = d.Config.Checkpoint.Dir
	}
	if d.Checkpoints, err = Checkpoints(filepath.Join(path, ckDir)); err != nil {
		return d, err
	}
	if info.Steps > 0 {
		if d.Summary, err = Summarize(path); err != nil {
			return d, err
		}
		rows, err := ReadJSONL(filepath.Join(path, "metrics.jsonl"))
		if err != nil {
			return d, err
		}
		for k, v := range rows[len(rows)-1] {
			if f, ok := v.(float64); ok {
				d.Latest[k] = f
			}
		}
	}
	if p := filepath.Join(path, "adapter"); dirExists(p) {
		d.Adapter = p
	}
	if p := filepath.Join(path, "rewards.png"); fileExists(p) {
		d.Plot = p
	}
	return d, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
