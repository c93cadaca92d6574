package optim

import (
	"fmt"
	"strconv"

	"github.com/grpo-dev/grpo/model/safetensors"
)

// stateFormat is the format SaveState records in the file's metadata.
const stateFormat = "grpo-adamw-v1"

// SaveState writes the optimizer's moments and step count to path as
// safetensors (F32, so the round trip is bit-exact), atomically.
func (o *AdamW) SaveState(path string) error {
	ts, err := o.stateTensors(func(int) bool { return true })
	if err != nil {
		return err
	}
	return writeState(path, ts, o.Step)
}

// SaveShards writes the optimizers of an expert-parallel group's ranks
// (each ShardAcross the group) as the one file SaveState writes of one
// optimizer over every parameter: the moments of a parameter every rank
// holds once, rank 0's (the ranks update it alike), and each rank's own
// parameters' (its experts') from it, under the same names. LoadState
// reads it whole into one optimizer over every parameter, or into each
// rank's of any group that splits the experts, each taking its own.
func SaveShards(path string, shards []*AdamW) error {
	if len(shards) == 0 {
		return fmt.Errorf("saving a sharded optimizer state: no shards")
	}
	var ts []safetensors.Tensor
	seen := map[string]int{}
	for r, o := range shards {
		if o.Step != shards[0].Step {
			return fmt.Errorf("saving a sharded optimizer state: rank %d has taken %d steps, rank 0 %d", r, o.Step, shards[0].Step)
		}
		if o.shards == nil && len(shards) > 1 {
			return fmt.Errorf("saving a sharded optimizer state: rank %d's optimizer holds no shard (ShardAcross)", r)
		}
		if n, n0 := o.replicated(), shards[0].replicated(); n != n0 {
			return fmt.Errorf("saving a sharded optimizer state: rank %d holds %d parameters every rank holds, rank 0 %d", r, n, n0)
		}
		own, err := o.stateTensors(func(i int) bool { return r == 0 || o.shards.local[i] })
		if err != nil {
			return fmt.Errorf("saving a sharded optimizer state: rank %d: %w", r, err)
		}
		for _, t := range own {
			if prev, ok := seen[t.Name]; ok {
				return fmt.Errorf("saving a sharded optimizer state: %s is held by ranks %d and %d", t.Name, prev, r)
			}
			seen[t.Name] = r
		}
		ts = append(ts, own...)
	}
	return writeState(path, ts, shards[0].Step)
}

// replicated counts the parameters every rank holds: all, unless some
// are this rank's own (ShardAcross).
func (o *AdamW) replicated() int {
	n := 0
	for i := range o.params {
		if o.shards == nil || !o.shards.local[i] {
			n++
		}
	}
	return n
}

// stateTensors downloads the moments of the parameters keep selects (by
// index), named as State names them.
func (o *AdamW) stateTensors(keep func(param int) bool) ([]safetensors.Tensor, error) {
	var ts []safetensors.Tensor
	for i, st := range o.State() {
		if !keep(i / 2) { // State lists each parameter's two moments
			continue
		}
		v := make([]float32, st.Value.Len())
		o.be.Download(v, st.Value)
		t, err := safetensors.NewF32(st.Name, []int{len(v)}, v)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, o.be.Sync()
}

// writeState writes moments and the step count as SaveState does.
func writeState(path string, ts []safetensors.Tensor, step int) error {
	return safetensors.Write(path, ts, map[string]string{"step": strconv.Itoa(step), "format": stateFormat})
}

// LoadState restores what SaveState (or SaveShards) wrote, for the same
// parameters: by name, so a file of every parameter's moments restores
// the ones this optimizer holds (an expert-parallel rank's).
func (o *AdamW) LoadState(path string) error {
	f, err := safetensors.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	step, err := strconv.Atoi(f.Metadata()["step"])
	if err != nil || step < 0 {
		return fmt.Errorf("%s: no valid \"step\" in the metadata; is this an optimizer state file?", path)
	}
	for _, st := range o.State() {
		t, ok := f.Tensor(st.Name)
		if !ok {
			return fmt.Errorf("%s: optimizer state for %q is missing; was it saved for a different adapter?", path, st.Name)
		}
		v, err := t.Float32s()
		if err != nil {
			return fmt.Errorf("%s: %q: %v", path, st.Name, err)
		}
		if len(v) != st.Value.Len() {
			return fmt.Errorf("%s: %q has %d values, the adapter needs %d", path, st.Name, len(v), st.Value.Len())
		}
		o.be.Upload(st.Value, v)
	}
	o.Step = step
	return o.be.Sync()
}
