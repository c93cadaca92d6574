package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/grpo-dev/grpo/loader"
)

// openModel opens s.Model (a --model directory or hub id) through the
// loader, the one way every command opens a model, drawing a download's
// progress on stderr. Ctrl-C stops a download cleanly; the next run
// resumes it.
func openModel(s loader.Spec) (*loader.Loaded, error) {
	if s.Model == "" {
		return nil, errNoModel
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	s.Download = newDownloadProgress(os.Stderr)
	s.Log = func(line string) { fmt.Fprintln(os.Stderr, line) }
	return loader.Open(ctx, s)
}

// resolveModelDir is openModel's first step alone, for commands that read
// a model's files without opening it: the directory itself, the snapshot
// in the Hugging Face cache, or a fresh download into that cache.
func resolveModelDir(arg string) (string, error) {
	if arg == "" {
		return "", errNoModel
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return loader.Resolve(ctx, arg, newDownloadProgress(os.Stderr))
}

var errNoModel = usagef("--model is required (a model directory or a hub id such as Qwen/Qwen3-0.6B)")
