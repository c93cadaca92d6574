package cpu

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// Kernels selects the elementwise kernels (SwiGLU and its backward,
// RMSNorm and its backward, the exps of log-softmax and attention, AdamW,
// Add, AddBias): C kernels built by cgo for one instruction set, float32
// with a vectorised exp (vec_kernels.h), or the plain-Go float64 loops.
// Both are held to the same conformance suite; the C ones are 3–5× faster.
type Kernels string

const (
	// KernelsAuto is the widest instruction set the CPU runs; the
	// environment variable GRPO_CPU_KERNELS (any name below) overrides it.
	KernelsAuto Kernels = "auto"
	// KernelsGo is the plain-Go path, the only one in CGO_ENABLED=0 builds.
	KernelsGo Kernels = "go"
	// KernelsSSE2, KernelsAVX2 (with FMA) and KernelsAVX512 (F, DQ, VL)
	// ask for one instruction set; a CPU without it gets the widest it
	// has (KernelsName says which).
	KernelsSSE2   Kernels = "sse2"
	KernelsAVX2   Kernels = "avx2"
	KernelsAVX512 Kernels = "avx512"
)

// ParseKernels turns a user-facing name ("" is auto) into a Kernels, or
// explains which names are accepted.
func ParseKernels(s string) (Kernels, error) {
	switch k := Kernels(strings.ToLower(strings.TrimSpace(s))); k {
	case "", KernelsAuto:
		return KernelsAuto, nil
	case KernelsGo, KernelsSSE2, KernelsAVX2, KernelsAVX512:
		return k, nil
	}
	return "", fmt.Errorf("CPU kernels %q are not one of auto, go, sse2, avx2, avx512", s)
}

// WithKernels picks the elementwise kernels (default KernelsAuto).
func WithKernels(k Kernels) Option { return func(c *config) { c.kernels = k } }

// selectKernels resolves the request (and GRPO_CPU_KERNELS for auto) to a
// table of C kernels, or nil for the Go path. fault > 0 loads a broken
// copy (tests only).
func selectKernels(want Kernels, fault int) *vecTable {
	if want == KernelsAuto {
		if env, err := ParseKernels(os.Getenv("GRPO_CPU_KERNELS")); err == nil {
			want = env
		}
	}
	isas := vecISAs()
	if want == KernelsGo || len(isas) == 0 {
		return nil
	}
	isa := isas[len(isas)-1]
	if i := slices.Index(isas, string(want)); i >= 0 {
		isa = isas[i]
	} else if want == KernelsSSE2 || want == KernelsAVX2 && !slices.Contains(isas, "avx2") {
		isa = isas[0]
	}
	return vecLoad(isa, fault)
}

// KernelsName is the active elementwise path: "avx512", "avx2", "sse2"
// (C kernels for that instruction set) or "go".
func (be *Backend) KernelsName() string {
	if be.vec == nil {
		return "go"
	}
	return be.vec.name
}

// AvailableKernels lists the kernels this build and CPU can run: KernelsGo
// first, then each instruction set the C kernels were built for and the
// CPU supports, narrowest first.
func AvailableKernels() []Kernels {
	ks := []Kernels{KernelsGo}
	for _, isa := range vecISAs() {
		ks = append(ks, Kernels(isa))
	}
	return ks
}
