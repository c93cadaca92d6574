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
		if err := checkHubConfig(ctx, id); err != nil {
			return "", fmt.Errorf("model = %q: %w", id, err)
		}
	}
	dir, err := hub.Resolve(ctx, id, hub.Options{Progress: download})
	if err != nil {
		return "", fmt.Errorf("model = %q: %w", id, err)
	}
	return dir, nil
}

// checkHubConfig reads a hub model's config.json alone, before its
// weights, when the model is not in the cache yet: a model type or an
// architecture grpo cannot run is refused in seconds, not after gigabytes
// of safetensors (eval and train --force, which no estimate precedes).
func checkHubConfig(ctx context.Context, id string) error {
	if _, err := hub.Resolve(ctx, id, hub.Options{Offline: true}); err == nil {
		return nil // cached: model.Load checks the config, with nothing to download
	}
	path, err := hub.DownloadFile(ctx, id, "config.json", hub.Options{})
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if _, err := model.ParseConfig(data); err != nil {
		return fmt.Errorf("config.json: %w (checked before downloading the weights)", err)
	}
	return nil
}
