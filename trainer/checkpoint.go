package trainer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/curriculum"
	"github.com/grpo-dev/grpo/internal/atomicfile"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/rundir"
	"github.com/grpo-dev/grpo/trainer/health"
)

// checkpointState is state.json of a checkpoint: what, besides the adapter
// and the optimizer, a resumed run needs to continue exactly.
type checkpointState struct {
	Format  string `json:"format"`
	Step    int    `json:"step"`
	Seed    uint64 `json:"seed"`
	Cursors []int  `json:"cursors"`
	// Health carries the warning counters so warnings fire as they would
	// have without the interruption.
	Health health.State `json:"health"`
	// MaxExamplesPerStep is the most examples one step of the run has
	// drawn (batch_size / rollouts_per_example, which a resume may
	// change): the cursors cannot sum to more than Step times it.
	MaxExamplesPerStep int `json:"max_examples_per_step,omitempty"`
	// Pools are the [buffer] difficulty pools, when the run has them.
	Pools *curriculum.State `json:"pools,omitempty"`
	// Overlap is, per env, whether its next step's rollouts hide the
	// environment's replies (rollout.OverlapPlan).
	Overlap []bool `json:"overlap,omitempty"`
}

// checkpointFormat is written; v1 (before checksums) is still read.
const (
	checkpointFormat   = "grpo-checkpoint-v2"
	checkpointFormatV1 = "grpo-checkpoint-v1"
)

// trainedState is what a checkpoint saves of the policy, the run's
// replicas (replicas.Set): one adapter and one optimizer state whatever
// the devices, data parallel ones' replica 0's, expert-parallel ranks'
// gathered, so a run resumes on another device count.
type trainedState interface {
	SaveAdapter(dir, baseModel string) error
	SaveOptimizer(path string) error
}

// saveCheckpoint writes checkpoints/step-N (adapter/, optimizer.safetensors,
// state.json, checksums.sha256 of them all, and config.toml: the config it was trained with, which a
// resume compares with the run's config.toml to catch edits) as one atomic
// directory, then deletes checkpoints beyond keepLast.
func saveCheckpoint(dir string, st checkpointState, pol trainedState, baseModel string, configText []byte, keepLast int) error {
	final := rundir.CheckpointPath(dir, st.Step)
	err := atomicfile.WriteDir(final, nil, func(tmp string) error {
		if err := pol.SaveAdapter(filepath.Join(tmp, "adapter"), baseModel); err != nil {
			return fmt.Errorf("adapter: %w", err)
		}
		if err := pol.SaveOptimizer(filepath.Join(tmp, "optimizer.safetensors")); err != nil {
			return fmt.Errorf("optimizer: %w", err)
		}
		if configText != nil {
			if err := atomicfile.WriteFile(filepath.Join(tmp, "config.toml"), configText, 0o644); err != nil {
				return err
			}
		}
		st.Format = checkpointFormat
		js, _ := json.MarshalIndent(st, "", "  ")
		if err := atomicfile.WriteFile(filepath.Join(tmp, "state.json"), js, 0o644); err != nil {
			return err
		}
		return rundir.WriteChecksums(tmp)
	})
	if err != nil {
		return fmt.Errorf("checkpoint step %d: %w", st.Step, err)
	}
	return rundir.PruneCheckpoints(dir, keepLast)
}

// loadCheckpoint restores the adapter (into a fresh lora.Adapter on m), the
// optimizer state and state.json from the checkpoint of step at path,
// after checking every file against checksums.sha256 and state.json's
// values against the directory.
func loadCheckpoint(path string, step int, m *model.Model) (*lora.Adapter, checkpointState, error) {
	var st checkpointState
	js, err := os.ReadFile(filepath.Join(path, "state.json"))
	if err != nil {
		return nil, st, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err := json.Unmarshal(js, &st); err != nil || st.Format != checkpointFormat && st.Format != checkpointFormatV1 {
		return nil, st, fmt.Errorf("checkpoint %s: state.json is not a %s file", path, checkpointFormat)
	}
	// A v1 checkpoint has no checksums; a file that has them is checked
	// whatever its state.json says, since a flipped bit may say v1.
	_, statErr := os.Stat(filepath.Join(path, rundir.ChecksumsFile))
	if st.Format != checkpointFormatV1 || statErr == nil {
		if err := rundir.VerifyChecksums(path); err != nil {
			return nil, st, fmt.Errorf("checkpoint %s: %w", path, err)
		}
	}
	if err := st.check(step); err != nil {
		return nil, st, fmt.Errorf("checkpoint %s: state.json: %w", path, err)
	}
	ad, err := lora.Load(filepath.Join(path, "adapter"), m)
	if err != nil {
		return nil, st, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return ad, st, nil
}

// check validates state.json's values for the checkpoint of step: ones
// that grpo cannot have written would misplace the run or panic later.
func (st checkpointState) check(step int) error {
	if st.Step != step {
		return fmt.Errorf("step is %d in the directory of step %d; a checkpoint directory keeps the name it was written under", st.Step, step)
	}
	sum := 0
	for i, c := range st.Cursors {
		if c < 0 {
			return fmt.Errorf("cursors[%d] is %d; a cursor counts examples drawn and is never negative", i, c)
		}
		sum += c
	}
	if st.Format == checkpointFormatV1 {
		return nil // no record of examples per step to bound the cursors
	}
	if st.MaxExamplesPerStep <= 0 && st.Step > 0 {
		return fmt.Errorf("max_examples_per_step is %d; a run that took steps drew examples", st.MaxExamplesPerStep)
	}
	if limit := st.Step * st.MaxExamplesPerStep; sum > limit || sum < 0 {
		return fmt.Errorf("cursors %v draw %d examples, past the %d that %d steps of at most %d examples can have drawn", st.Cursors, sum, limit, st.Step, st.MaxExamplesPerStep)
	}
	return nil
}
