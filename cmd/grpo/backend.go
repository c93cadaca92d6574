package main

import "flag"

// deviceFlag declares --device on a command's flag set; the loader opens
// the backend it names.
func deviceFlag(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "device", "cpu", "compute backend: cpu, or cuda in a binary built with -tags cuda")
}
