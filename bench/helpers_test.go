package bench

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
)

// randomModel is cfg with random weights on device (dtype auto, as
// grpo bench --shape makes it); the test frees it at its end.
func randomModel(t *testing.T, cfg model.Config, device string) *model.Model {
	t.Helper()
	be, err := kernels.Open(device)
	if err != nil {
		t.Fatal(err)
	}
	m, err := RandomModel(&cfg, be, "auto")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Free)
	return m
}
