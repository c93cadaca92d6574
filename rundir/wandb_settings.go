package rundir

// Wandb is where a run's W&B copy goes: its config's [wandb] section,
// with On resolved by the caller (Lab turns W&B on whenever [wandb] names
// a project).
type Wandb struct {
	On                           bool
	Project, Entity, Name, Group string
	Tags                         []string
	// Offline keeps the W&B run in the run directory only.
	Offline bool
}
