package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// CheckpointPath is the directory of step's checkpoint under dir
// (checkpoints/step-N of a run); what it holds is the trainer's business.
func CheckpointPath(dir string, step int) string {
	return filepath.Join(dir, fmt.Sprintf("step-%d", step))
}

// Checkpoints lists the complete checkpoints' steps under dir in
// increasing order. A checkpoint is complete once its directory has been
// renamed into place.
func Checkpoints(dir string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var steps []int
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), "step-"); ok && e.IsDir() {
			if s, err := strconv.Atoi(n); err == nil {
				steps = append(steps, s)
			}
		}
	}
	sort.Ints(steps)
	return steps, nil
}

// PruneCheckpoints deletes the oldest checkpoints under dir until at most
// keepLast remain; keepLast <= 0 keeps them all.
func PruneCheckpoints(dir string, keepLast int) error {
	if keepLast <= 0 {
		return nil
	}
	steps, err := Checkpoints(dir)
	if err != nil {
		return err
	}
	for len(steps) > keepLast {
		os.RemoveAll(CheckpointPath(dir, steps[0]))
		steps = steps[1:]
	}
	return nil
}
