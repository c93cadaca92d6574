package rundir

// RunConfig is what reading a run back needs from its config.toml.
type RunConfig struct {
	MaxSteps int
	// CheckpointDir is [checkpoint] dir, relative to the run directory.
	CheckpointDir string
}

// ConfigReader reads the RunConfig of the config.toml at path. The file's
// schema is package config's, which rundir does not import: the caller
// (cmd/grpo) passes a reader built on config.Load.
type ConfigReader func(path string) (RunConfig, error)
