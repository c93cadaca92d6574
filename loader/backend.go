package loader

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
	_ "github.com/grpo-dev/grpo/kernels/cpu" // registers "cpu"
)

// OpenBackend constructs the backend registered under device ("" is
// "cpu"), for callers that need it before the weights load (to read the
// device's free memory) or without a model at all.
func OpenBackend(device string) (kernels.Backend, error) {
	if device == "" {
		device = "cpu"
	}
	be, err := kernels.Open(device)
	if err != nil {
		return nil, fmt.Errorf("device = %q: %w", device, err)
	}
	return be, nil
}
