package main

import (
	"flag"

	"github.com/grpo-dev/grpo/kernels"
	_ "github.com/grpo-dev/grpo/kernels/cpu" // registers "cpu"
)

// deviceFlag declares --device on a command's flag set.
func deviceFlag(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "device", "cpu", "compute backend: cpu, or cuda in a binary built with -tags cuda")
}

func openBackend(name string) (kernels.Backend, error) {
	return kernels.Open(name)
}
