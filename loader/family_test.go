package loader

import (
	"context"
	"strings"
	"testing"
)

// TestResolvePendingFamily: a hub id of a family grpo cannot run yet is
// refused, in one line naming it, before any download (offline and with
// an empty cache, a lookup would fail with another message).
func TestResolvePendingFamily(t *testing.T) {
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "1")
	_, err := Resolve(context.Background(), "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", nil)
	if err == nil || !strings.HasPrefix(err.Error(), `model = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": the Nemotron-3 model family`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("Nemotron-3: %v", err)
	}
	_, err = Resolve(context.Background(), "Qwen/Qwen3.5-4B", nil)
	if err == nil || strings.Contains(err.Error(), "family") {
		t.Errorf("Qwen3.5 (offline, not cached): %v", err)
	}
}
