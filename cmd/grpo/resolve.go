package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/grpo-dev/grpo/model/hub"
)

// resolveModelDir turns a --model argument (a local directory or a hub id
// such as Qwen/Qwen3-0.6B) into a local directory holding config.json,
// tokenizer files and weights: the directory itself, the snapshot in the
// Hugging Face cache, or a fresh download into that cache (progress on
// stderr). Ctrl-C stops a download cleanly; the next run resumes it.
func resolveModelDir(arg string) (string, error) {
	if arg == "" {
		return "", usagef("--model is required (a model directory or a hub id such as Qwen/Qwen3-0.6B)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return hub.Resolve(ctx, arg, hub.Options{Progress: newDownloadProgress(os.Stderr)})
}
