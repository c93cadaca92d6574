package trainer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/internal/atomicfile"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/optim"
	"github.com/grpo-dev/grpo/rundir"
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
	Health healthState `json:"health"`
}

const checkpointFormat = "grpo-checkpoint-v1"

// saveCheckpoint writes checkpoints/step-N (adapter/, optimizer.safetensors,
// state.json, and config.toml: the config it was trained with, which a
// resume compares with the run's config.toml to catch edits) as one atomic
// directory, then deletes checkpoints beyond keepLast.
func saveCheckpoint(dir string, st checkpointState, ad *lora.Adapter, opt *optim.AdamW, baseModel string, configText []byte, keepLast int) error {
	final := rundir.CheckpointPath(dir, st.Step)
	err := atomicfile.WriteDir(final, nil, func(tmp string) error {
		if err := lora.Save(filepath.Join(tmp, "adapter"), ad, baseModel); err != nil {
			return fmt.Errorf("adapter: %w", err)
		}
		if err := opt.SaveState(filepath.Join(tmp, "optimizer.safetensors")); err != nil {
			return fmt.Errorf("optimizer: %w", err)
		}
		if configText != nil {
			if err := atomicfile.WriteFile(filepath.Join(tmp, "config.toml"), configText, 0o644); err != nil {
				return err
			}
		}
		st.Format = checkpointFormat
		js, _ := json.MarshalIndent(st, "", "  ")
		return atomicfile.WriteFile(filepath.Join(tmp, "state.json"), js, 0o644)
	})
	if err != nil {
		return fmt.Errorf("checkpoint step %d: %w", st.Step, err)
	}
	return rundir.PruneCheckpoints(dir, keepLast)
}

// loadCheckpoint restores the adapter (into a fresh lora.Adapter on m), the
// optimizer state and state.json from checkpoint directory path.
func loadCheckpoint(path string, m *model.Model) (*lora.Adapter, checkpointState, error) {
	var st checkpointState
	js, err := os.ReadFile(filepath.Join(path, "state.json"))
	if err != nil {
		return nil, st, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err := json.Unmarshal(js, &st); err != nil || st.Format != checkpointFormat {
		return nil, st, fmt.Errorf("checkpoint %s: state.json is not a %s file", path, checkpointFormat)
	}
	ad, err := lora.Load(filepath.Join(path, "adapter"), m)
	if err != nil {
		return nil, st, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return ad, st, nil
}
