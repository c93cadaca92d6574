package main

import (
	"fmt"
	"os"
)

// resolveModelDir turns a --model argument (a local directory or a hub id
// such as Qwen/Qwen3-0.6B) into a local directory holding config.json,
// tokenizer files and weights.
func resolveModelDir(arg string) (string, error) {
	if arg == "" {
		return "", usagef("--model is required (a model directory or a hub id such as Qwen/Qwen3-0.6B)")
	}
	st, err := os.Stat(arg)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("model %q: not a local directory (hub ids are not resolved yet)", arg)
	}
	return arg, nil
}
