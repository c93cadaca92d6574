package trainer

import (
	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/rundir"
)

// ReadRunConfig reads what rundir lists of a run from the config.toml the
// trainer wrote into it: rundir.List and Inspect take it as their
// rundir.ConfigReader, as rundir does not parse configs itself.
func ReadRunConfig(path string) (rundir.RunConfig, error) {
	c, err := config.Load(path)
	if err != nil {
		return rundir.RunConfig{}, err
	}
	return rundir.RunConfig{MaxSteps: c.MaxSteps, CheckpointDir: c.Checkpoint.Dir}, nil
}
