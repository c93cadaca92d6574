//go:build cuda

package cuda

import (
	"embed"
	"regexp"
)

// ptxFiles are the kernels compiled by nvcc (ptx/build.sh), one file per
// source and virtual architecture; the driver JIT-compiles them for the GPU
// at hand, so `go build -tags cuda` needs no nvcc.
//
//go:embed ptx/*.ptx
var ptxFiles embed.FS

var ptxEntry = regexp.MustCompile(`\.visible \.entry ([A-Za-z0-9_]+)\(`)
