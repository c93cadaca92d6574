package cpu

import (
	"fmt"
	"os"
	"strings"
)

// BLASInfo is what OpenBLAS reports about itself, for `grpo bench` and
// `grpo train --verbose`: which kernel set it runs (its "core", picked
// from the CPU at load, or forced by OPENBLAS_CORETYPE) and its threads.
type BLASInfo struct {
	// Library is the file that was loaded ("libopenblas.so.0"); empty,
	// with Err set, when the backend uses gonum's sgemm instead.
	Library string
	// Core is openblas_get_corename(), e.g. "SkylakeX" or "Haswell"
	// (empty in a BLAS without that call).
	Core string
	// Config is openblas_get_config(), e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH
	// NO_AFFINITY SkylakeX MAX_THREADS=64".
	Config string
	// Threads is openblas_get_num_threads(): 1, because the backend splits
	// each product over its own goroutines instead (matmul.go).
	Threads int
	// CPU is the widest vector instruction set of this CPU: "AVX-512",
	// "AVX2", "AVX", "SSE", or "" where unknown (not x86-64, or no cgo).
	CPU string
	// CoreType is OPENBLAS_CORETYPE as set in the environment ("" when
	// unset). grpo never sets or changes it: some machines need it.
	CoreType string
	// Warning is one line when OPENBLAS_CORETYPE makes OpenBLAS run an
	// older kernel set than the CPU supports, saying what it costs.
	Warning string
	// Err is why OpenBLAS is not in use (nil when it is).
	Err error
}

// OpenBLASInfo reports on the OpenBLAS the backend loads (loading it if
// no backend has yet).
func OpenBLASInfo() BLASInfo {
	lib, core, config, threads, level, err := openBLASQuery()
	info := BLASInfo{Library: lib, Core: core, Config: config, Threads: threads,
		CPU: levelNames[level], CoreType: os.Getenv("OPENBLAS_CORETYPE"), Err: err}
	if err == nil {
		info.Warning = coreWarning(info.CoreType, core, level)
	}
	return info
}

// String is one line: library, core, threads, and the CPU's level.
func (i BLASInfo) String() string {
	if i.Err != nil {
		return "BLAS: gonum (" + i.Err.Error() + ")"
	}
	s := "BLAS: OpenBLAS " + i.Library
	if i.Core != "" {
		s += ", core " + i.Core
	}
	if i.CoreType != "" {
		s += " (OPENBLAS_CORETYPE=" + i.CoreType + ")"
	}
	s += fmt.Sprintf(", %d thread", i.Threads)
	if i.Threads != 1 {
		s += "s"
	}
	if i.Threads == 1 {
		s += " (grpo splits each product over its own goroutines)"
	}
	if i.CPU != "" {
		s += "; CPU has " + i.CPU
	}
	return s
}

// Vector levels: 1 SSE, 2 AVX, 3 AVX2+FMA, 4 AVX-512.
var levelNames = map[int]string{1: "SSE", 2: "AVX", 3: "AVX2", 4: "AVX-512"}

// coreLevels maps OpenBLAS's x86-64 core names (lower case, as
// OPENBLAS_CORETYPE accepts them) to the widest vector level their sgemm
// kernels use. Names not listed (other architectures) are not compared.
var coreLevels = map[string]int{
	"prescott": 1, "core2": 1, "penryn": 1, "dunnington": 1, "nehalem": 1, "atom": 1,
	"opteron": 1, "opteron(sse3)": 1, "barcelona": 1, "nano": 1, "bobcat": 1,
	"sandybridge": 2, "bulldozer": 2, "piledriver": 2, "steamroller": 2, "excavator": 2,
	"haswell": 3, "zen": 3,
	"skylakex": 4, "cooperlake": 4, "sapphirerapids": 4,
}

// coreWarning is the warning line, or "", for OPENBLAS_CORETYPE = forced
// (as set, "" when unset), the core OpenBLAS reports, and the CPU's level:
// only a forced core below what the CPU runs is worth a line. Each level
// down halves sgemm's peak (half the vector width, or no FMA for AVX).
func coreWarning(forced, core string, cpuLevel int) string {
	if forced == "" {
		return ""
	}
	got, ok := coreLevels[strings.ToLower(core)]
	if !ok || got >= cpuLevel {
		return ""
	}
	return fmt.Sprintf("warning: OPENBLAS_CORETYPE=%s makes OpenBLAS run its %s (%s) kernels on a CPU with %s: "+
		"sgemm's peak is about %d× lower (matrix products are most of a step); unset it unless this machine needs it",
		forced, core, levelNames[got], levelNames[cpuLevel], 1<<(cpuLevel-got))
}
