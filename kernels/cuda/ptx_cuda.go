//go:build cuda

package cuda

import (
	"embed"
	"regexp"
)

// ptxFiles are the kernels compiled by nvcc (ptx/build.sh), one file per
// source and virtual architecture, and ptxas's cubin of each for the real
// architecture: the driver loads a cubin as it is and JIT-compiles the PTX
// only for a GPU the cubin does not fit, so `go build -tags cuda` needs no
// nvcc.
//
//go:embed ptx/*.ptx ptx/*.cubin
var ptxFiles embed.FS

var ptxEntry = regexp.MustCompile(`\.visible \.entry ([A-Za-z0-9_]+)\(`)
