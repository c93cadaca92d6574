// Package cpu owns the reference kernels.Backend: every op as a plain Go
// loop over float32 slices, parallelised over rows or heads with
// goroutines, with matrix products (MatMul, and the two products inside
// Attention) done by an sgemm that is OpenBLAS when it can be dlopen'd at
// run time and gonum's pure-Go sgemm otherwise. Ops run synchronously, so
// Sync always returns nil.
//
// Storage: F32 buffers are []float32; BF16 buffers are also []float32,
// holding values already rounded to bfloat16 (nearest-even) at upload, so
// they behave exactly like bf16 in every op while computing in f32; I32
// buffers are []int32. Host code that runs on this backend may reach the
// storage directly through Float32s and Int32s.
package cpu

import (
	"runtime"

	"github.com/grpo-dev/grpo/kernels"
)

// Backend is the CPU implementation of kernels.Backend. It holds no mutable
// state, so it is safe for concurrent use (each op still must not race with
// another op on the same buffers).
type Backend struct {
	gemm     sgemm
	blasName string
	workers  int
	// vec holds the C elementwise kernels; nil means the plain-Go ones.
	vec *vecTable
}

var _ kernels.Backend = (*Backend)(nil)

type config struct {
	blas    BLAS
	kernels Kernels
	workers int
	fault   int // > 0: a deliberately broken copy of the C kernels (tests)
}

// Option configures New.
type Option func(*config)

// WithBLAS picks the sgemm (default BLASAuto).
func WithBLAS(b BLAS) Option { return func(c *config) { c.blas = b } }

// WithWorkers sets how many goroutines an op may use (default GOMAXPROCS
// at New; values below 1 mean 1).
func WithWorkers(n int) Option { return func(c *config) { c.workers = n } }

// New returns a CPU backend.
func New(opts ...Option) *Backend {
	cfg := config{blas: BLASAuto, kernels: KernelsAuto, workers: runtime.GOMAXPROCS(0)}
	for _, o := range opts {
		o(&cfg)
	}
	g, name := selectBLAS(cfg.blas)
	return &Backend{gemm: g, blasName: name, workers: max(1, cfg.workers), vec: selectKernels(cfg.kernels, cfg.fault)}
}

// Name is "cpu" whichever BLAS and kernels are active.
func (*Backend) Name() string { return "cpu" }

// Describe: the CPU computes in f32 only, so BF16 buffers are widened to
// f32 on upload (buffer.go) and MatMul keeps A in f32; its memory is the
// host's.
func (*Backend) Describe() kernels.Description {
	return kernels.Description{Name: "cpu", BF16Storage: kernels.F32, KVCache: kernels.F32}
}

// BLASName is the active sgemm: "openblas" or "gonum".
func (be *Backend) BLASName() string { return be.blasName }

// Workers is the number of goroutines an op may use.
func (be *Backend) Workers() int { return be.workers }

// Sync returns nil: every op has finished when its call returns.
func (*Backend) Sync() error { return nil }
