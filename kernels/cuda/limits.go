package cuda

import (
	_ "embed"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The per-block limits of sm_90 (CUDA C Programming Guide, "Technical
// Specifications per Compute Capability"): the backend and the emulator
// check every launch against them, so a launch the GPU would refuse fails
// the same way under emu.
const (
	// MaxThreadsPerBlock is every GPU's limit since sm_20; a kernel's own
	// __launch_bounds__ may lower it.
	MaxThreadsPerBlock = 1024
	// RegistersPerBlock is the register file one block may use: 64 K
	// 32-bit registers on sm_80 and sm_90.
	RegistersPerBlock = 65536
	// DefaultSharedPerBlock is what static plus dynamic shared memory may
	// total without opting in (cuFuncSetAttribute with
	// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
	DefaultSharedPerBlock = 48 << 10
	// MaxSharedPerBlockOptIn is sm_90's opt-in maximum per block
	// (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN).
	MaxSharedPerBlockOptIn = 227 << 10
)

// KernelFigures are what ptxas reported for one kernel of the committed
// PTX (ptx/ptxas-sm90.txt, written by ptx/build.sh).
type KernelFigures struct {
	Registers    int // per thread
	StaticShared int // bytes of static __shared__ memory
	MaxThreads   int // its __launch_bounds__ (.maxntid); 0 if it has none
}

// RegistersFor is the register file a block of threads of this kernel
// takes: registers are allocated per warp, each thread's count rounded up
// to a multiple of 8 (sm_80/sm_90 allocation granularity: 256 per warp).
func (f KernelFigures) RegistersFor(threads int) int {
	warps := (threads + 31) / 32
	return warps * 32 * ((f.Registers + 7) / 8 * 8)
}

// CheckLaunch returns why a launch of kernel name with block threads and
// sharedBytes of dynamic shared memory would fail on the GPU, given the
// dynamic-shared-memory limit the kernel has been opted into (0: none), or
// nil.
func (f KernelFigures) CheckLaunch(name string, threads, sharedBytes, optIn int) error {
	if f.MaxThreads > 0 && threads > f.MaxThreads {
		return fmt.Errorf("%s: block of %d threads exceeds the kernel's __launch_bounds__(%d) (.maxntid in its PTX; the GPU fails the launch)",
			name, threads, f.MaxThreads)
	}
	if regs := f.RegistersFor(threads); regs > RegistersPerBlock {
		return fmt.Errorf("%s: %d registers per thread × %d threads needs %d registers, more than the %d of one block (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES on the GPU); give it __launch_bounds__(%d)",
			name, f.Registers, threads, regs, RegistersPerBlock, threads)
	}
	if total := f.StaticShared + sharedBytes; optIn == 0 && total > DefaultSharedPerBlock {
		return fmt.Errorf("%s: %d bytes of dynamic shared memory (+%d static) exceed the %d bytes a block gets without opting in; call SetMaxDynamicShared(%q, %d) first (cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES)",
			name, sharedBytes, f.StaticShared, DefaultSharedPerBlock, name, sharedBytes)
	}
	if optIn > 0 && sharedBytes > optIn {
		return fmt.Errorf("%s: %d bytes of dynamic shared memory exceed the %d it was opted into", name, sharedBytes, optIn)
	}
	if total := f.StaticShared + sharedBytes; total > MaxSharedPerBlockOptIn {
		return fmt.Errorf("%s: %d bytes of shared memory (%d dynamic + %d static) exceed sm_90's %d per block", name, total, sharedBytes, f.StaticShared, MaxSharedPerBlockOptIn)
	}
	return nil
}

//go:embed ptx/ptxas-sm90.txt
var ptxasReport string

var (
	figures    map[string]KernelFigures
	figureLine = regexp.MustCompile(`^(\w+)\s+\S+\s+(\d+) registers, .*, (\d+) bytes smem, maxntid (\d+|none)$`)
)

func init() {
	figures = map[string]KernelFigures{}
	for _, line := range strings.Split(ptxasReport, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := figureLine.FindStringSubmatch(line)
		if m == nil {
			panic("cuda: cannot parse ptx/ptxas-sm90.txt line " + strconv.Quote(line) + " (run make ptx)")
		}
		regs, _ := strconv.Atoi(m[2])
		smem, _ := strconv.Atoi(m[3])
		nt, _ := strconv.Atoi(m[4]) // "none" gives 0
		figures[m[1]] = KernelFigures{Registers: regs, StaticShared: smem, MaxThreads: nt}
	}
}

// Figures returns ptxas's figures for a kernel of the committed PTX.
func Figures(name string) (KernelFigures, bool) {
	f, ok := figures[name]
	return f, ok
}
