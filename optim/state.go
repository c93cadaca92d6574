package optim

import (
	"fmt"
	"strconv"

	"github.com/grpo-dev/grpo/model/safetensors"
)

// SaveState writes the optimizer's moments and step count to path as
// safetensors (F32, so the round trip is bit-exact), atomically.
func (o *AdamW) SaveState(path string) error {
	var ts []safetensors.Tensor
	for _, st := range o.State() {
		v := make([]float32, st.Value.Len())
		o.be.Download(v, st.Value)
		t, err := safetensors.NewF32(st.Name, []int{len(v)}, v)
		if err != nil {
			return err
		}
		ts = append(ts, t)
	}
	if err := o.be.Sync(); err != nil {
		return err
	}
	return safetensors.Write(path, ts, map[string]string{"step": strconv.Itoa(o.Step), "format": "grpo-adamw-v1"})
}

// LoadState restores what SaveState wrote, for the same parameters.
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
