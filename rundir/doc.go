// Package rundir owns run directories: their creation and layout, the
// metrics files (metrics.jsonl, eval.jsonl), log.txt, which checkpoints a
// run holds and their checksums.sha256 (not what is in them: that is the
// trainer's resume state),
// and reading runs back for `grpo runs list|status|logs`, reward plots
// (and a GEPA run's best-score plot) and run summaries. It writes what the
// trainer or package gepa gives it and never trains.
// The trainer's metrics reach metrics.jsonl, the TensorBoard events file
// (rundir/tfevents) and W&B (rundir/wandb) through one Sinks value.
package rundir
