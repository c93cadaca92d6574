package cuda

import "embed"

// Sources holds the kernel sources. Besides documenting what the PTX was
// built from (the staleness check compiles them again), embedding them
// makes this package's build depend on their contents, and kernels/emu —
// whose C++ #includes them from here — depends on this package, so editing
// a .cu rebuilds the emulator. (cgo alone tracks only files in the
// package's own directory.)
//
//go:embed *.cu *.cuh
var Sources embed.FS
