package loader

import (
	"context"
	"fmt"
	"os"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/hub"
)

// Resolve turns a model id into its local directory, downloading it into
// the hub cache if it is neither a directory nor cached; download hears
// the download's progress (nil is silent). Open does this first; commands
// that read a model's files without opening it (its tokenizer alone, its
// shapes for a merge) call it directly.
func Resolve(ctx context.Context, id string, download func(hub.FileProgress)) (string, error) {
	if id == "" {
		return "", fmt.Errorf("no model given: name a model directory or a hub id such as Qwen/Qwen3-0.6B")
	}
	if _, err := os.Stat(id); err != nil {
		// A hub id: refuse a family grpo cannot run before downloading it.
		if err := model.CheckHubID(id); err != nil {
			return "", fmt.Errorf("model = %q: %w", id, err)
		}
	}
	dir, err := hub.Resolve(ctx, id, hub.Options{Progress: download})
	if err != nil {
		return "", fmt.Errorf("model = %q: %w", id, err)
	}
	return dir, nil
}
