package loader

import (
	"context"
	"strings"
	"testing"
)

// TestResolveNoPendingFamily: hub ids of the families Lab's configs name
// pass the pending-family check that refuses, before any download, a
// family grpo cannot run (model.CheckHubID).
func TestResolveNoPendingFamily(t *testing.T) {
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "1")
	// No family Lab's configs name is pending today: Nemotron-3 (Nano
	// and Super, whose latent MoE runs) and Qwen3.5 ids go on to the hub
	// (here: offline, not cached).
	for _, id := range []string{"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16", "Qwen/Qwen3.5-4B"} {
		_, err := Resolve(context.Background(), id, nil)
		if err == nil || strings.Contains(err.Error(), "family") || !strings.Contains(err.Error(), "not in the cache") {
			t.Errorf("%s (offline, not cached): %v", id, err)
		}
	}
}
