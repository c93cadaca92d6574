package kernels

import (
	"errors"
	"testing"
)

// TestSampleParamsTopKOff: 0 and -1 both turn top_k off; below -1 is an
// error that names the key.
func TestSampleParamsTopKOff(t *testing.T) {
	for _, k := range []int{0, -1, 1, 50} {
		if err := (SampleParams{Temperature: 1, TopP: 1, TopK: k}).Validate(); err != nil {
			t.Errorf("top_k %d: %v", k, err)
		}
	}
	err := SampleParams{Temperature: 1, TopP: 1, TopK: -2}.Validate()
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Key != "top_k" || err.Error() != "top_k = -2: must be a count ≥ 1, or 0 or -1 to disable it" {
		t.Errorf("top_k -2: %v", err)
	}
}
