//go:build cuda

package main

// A binary built with -tags cuda offers --device cuda: kernels/cuda
// registers the backend under that name only with the tag (its driver
// binding exits the process at init when no GPU driver is present, so the
// default binary never links it).
import _ "github.com/grpo-dev/grpo/kernels/cuda"
