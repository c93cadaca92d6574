package rundir

import (
	"os"
	"path/filepath"
	"time"
)

// Detail is Inspect plus what `grpo runs status` shows.
type Detail struct {
	Info
	// Summary holds the first and last 10% rewards (valid when Steps > 0).
	Summary Summary
	// Latest is the last step's metrics.
	Latest map[string]float64
	// Checkpoints are the complete checkpoints' steps.
	Checkpoints []int
	// Adapter and Plot are paths, "" when the run has not written them.
	Adapter, Plot string
}

// InspectDetail reads everything `grpo runs status` shows but the
// config, which the caller reads itself.
func InspectDetail(path string, now time.Time, read ConfigReader) (Detail, error) {
	info, err := Inspect(path, now, read)
	if err != nil {
		return Detail{}, err
	}
	d := Detail{Info: info, Latest: map[string]float64{}}
	ckDir := "checkpoints"
	if cfg, err := read(filepath.Join(path, "config.toml")); err == nil {
		ckDir = cfg.CheckpointDir
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
