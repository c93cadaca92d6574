package main

import (
	"fmt"
	"io"

	"github.com/grpo-dev/grpo/kernels/cpu"
)

// cpuReport writes, for a run on the CPU backend, which BLAS and which
// elementwise kernels it uses (verbose only) and OpenBLAS's warning when
// OPENBLAS_CORETYPE forces older kernels than the CPU runs (always: it
// can halve a step's speed). Other devices get nothing.
func cpuReport(w io.Writer, device string, verbose bool) {
	if device != "cpu" {
		return
	}
	info := cpu.OpenBLASInfo()
	if verbose {
		fmt.Fprintln(w, info)
		k := cpu.New().KernelsName()
		how := "C, float32 with a vector exp; GRPO_CPU_KERNELS=go selects the plain-Go ones"
		if k == "go" {
			how = "plain Go, float64"
		}
		fmt.Fprintf(w, "elementwise kernels: %s (%s)\n", k, how)
	}
	if info.Warning != "" {
		fmt.Fprintln(w, info.Warning)
	}
}
