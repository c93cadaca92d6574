package gepa

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"

	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// StateFile is the run's resumable state in its directory, rewritten
// whole (atomically) after every iteration.
const StateFile = "gepa_state.json"

const stateVersion = 1

// state is everything a run needs to go on exactly as if it had not been
// stopped: the pool, the budget spent, the random streams' positions, the
// minibatch dealer and the merge schedule.
type state struct {
	Version  int            `json:"version"`
	Settings map[string]any `json:"settings"`
	// Iteration is the last finished iteration (0: the seed validated).
	Iteration int         `json:"iteration"`
	Calls     int         `json:"calls"`
	Pool      []Candidate `json:"pool"`
	Batches   minibatches `json:"minibatches"`
	// SelectRNG and BatchRNG are the PCG streams of parent (and merge
	// pair) selection and of the minibatch shuffles.
	SelectRNG []byte `json:"select_rng"`
	BatchRNG  []byte `json:"batch_rng"`
	// MergesDue, MergesTried and LastAccepted are the merge schedule;
	// Merged the pairs already tried.
	MergesDue    int      `json:"merges_due"`
	MergesTried  int      `json:"merges_tried"`
	LastAccepted bool     `json:"last_accepted"`
	Merged       [][2]int `json:"merged"`
	// History is the best mean validation score after each iteration.
	History []HistoryPoint `json:"history"`
}

// HistoryPoint is the pool's best after an iteration.
type HistoryPoint struct {
	Iteration int     `json:"iteration"`
	Calls     int     `json:"calls"`
	BestID    int     `json:"best_candidate"`
	BestScore float64 `json:"best_score"`
}

// rngs are a state's random streams, live.
type rngs struct {
	selPCG, batchPCG *rand.PCG
	sel, batch       *rand.Rand
}

func newRNGs(seed uint64) *rngs {
	r := &rngs{selPCG: rand.NewPCG(seed, 0x9e3779b97f4a7c15), batchPCG: rand.NewPCG(seed, 0xbf58476d1ce4e5b9)}
	r.sel, r.batch = rand.New(r.selPCG), rand.New(r.batchPCG)
	return r
}

func (r *rngs) save(st *state) {
	st.SelectRNG, _ = r.selPCG.MarshalBinary()
	st.BatchRNG, _ = r.batchPCG.MarshalBinary()
}

func (r *rngs) restore(st *state) error {
	if err := r.selPCG.UnmarshalBinary(st.SelectRNG); err != nil {
		return fmt.Errorf("select_rng: %w", err)
	}
	if err := r.batchPCG.UnmarshalBinary(st.BatchRNG); err != nil {
		return fmt.Errorf("batch_rng: %w", err)
	}
	return nil
}

// saveState writes st to dir atomically: a crash leaves the previous
// iteration's state or this one, never a torn file.
func saveState(dir string, st *state) error {
	data, err := json.MarshalIndent(st, "", " ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, StateFile), append(data, '\n'), 0o644)
}

// loadState reads dir's state; nil, nil when the directory holds none.
func loadState(dir string) (*state, error) {
	path := filepath.Join(dir, StateFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %v; the file is not a GEPA state grpo wrote (delete the run directory to start afresh)", path, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("%s: state version %d, this grpo reads %d", path, st.Version, stateVersion)
	}
	if len(st.Pool) == 0 {
		return nil, fmt.Errorf("%s: holds no candidates; delete the run directory to start afresh", path)
	}
	return &st, nil
}

// sameSettings compares settings as they read back from JSON, so a value
// that went through a file equals the one given now.
func sameSettings(saved, now map[string]any) (bool, error) {
	data, err := json.Marshal(now)
	if err != nil {
		return false, err
	}
	var norm map[string]any
	if err := json.Unmarshal(data, &norm); err != nil {
		return false, err
	}
	if len(saved) == 0 && len(norm) == 0 {
		return true, nil
	}
	return reflect.DeepEqual(saved, norm), nil
}

// settingsDiff names the first setting that differs, for the error.
func settingsDiff(saved, now map[string]any) string {
	data, _ := json.Marshal(now)
	var norm map[string]any
	_ = json.Unmarshal(data, &norm)
	for k, v := range norm {
		if !reflect.DeepEqual(saved[k], v) {
			return fmt.Sprintf("%s was %v, now %v", k, saved[k], v)
		}
	}
	for k, v := range saved {
		if _, ok := norm[k]; !ok {
			return fmt.Sprintf("%s was %v, now unset", k, v)
		}
	}
	return "they differ"
}
