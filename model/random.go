package model

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// randomChunk is the elements of one chunk of NewRandomParallel: the unit
// of work of one goroutine and of one upload, small enough that a
// worker's host buffer stays at 4 MiB whatever the tensor.
const randomChunk = 1 << 20

// NewRandomParallel builds a model of the given shape with random weights
// as NewRandom does (normal-like with std 0.02 and mean 0; norms 1;
// biases random) but at the cost real shapes need: values are drawn on
// every core, each chunk of each tensor from its own stream seeded by
// (seed, tensor, chunk), so the weights are the same whatever GOMAXPROCS,
// and each weight is allocated in dt (BF16 or F32) and uploaded chunk by
// chunk, without the whole model in host f32. The values differ from
// NewRandom's (whose single stream tests' goldens depend on).
//
// A value is the sum of four 16-bit uniforms off one 64-bit draw, centred
// and scaled (Irwin–Hall: mean 0, std exactly 0.02, bounded at ±3.46σ):
// one draw per value instead of NormFloat64's rejection sampling, and a
// shape close enough to normal for benchmarks, which is all this is for.
func NewRandomParallel(cfg *Config, be kernels.Backend, seed uint64, dt kernels.DType) *Model {
	m := newModel(cfg, be)
	specs := cfg.specs(&m.W)
	type job struct{ tensor, chunk int }
	type done struct {
		job
		f32  []float32
		bf16 []uint16
	}
	bufs := make([]kernels.Buffer, len(specs))
	for t, sp := range specs {
		bufs[t] = sp.place(be, sp.randomDType(dt), func(*fusedSpec) kernels.DType { return dt })
		*sp.dst = bufs[t]
	}
	jobs, results := make(chan job), make(chan done)
	free := make(chan done, 2*runtime.GOMAXPROCS(0)) // host buffers back from the uploader
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				sp := specs[j.tensor]
				lo := j.chunk * randomChunk
				n := min(randomChunk, numel(sp.shape)-lo)
				var d done
				select {
				case d = <-free:
				default:
					d = done{f32: make([]float32, randomChunk), bf16: make([]uint16, randomChunk)}
				}
				d.job = j
				d.f32 = d.f32[:n]
				fillRandom(d.f32, seed, j.tensor, j.chunk, len(sp.shape) == 1 && !isBias(sp.name))
				if bufs[j.tensor].DType() == kernels.BF16 {
					d.bf16 = d.bf16[:n]
					for i, v := range d.f32 {
						d.bf16[i] = safetensors.F32ToBF16(v)
					}
				}
				results <- d
			}
		}()
	}
	go func() {
		for t, sp := range specs {
			for c := range (numel(sp.shape) + randomChunk - 1) / randomChunk {
				jobs <- job{t, c}
			}
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	// The backend is driven by this goroutine alone: uploads happen here,
	// in whatever order the chunks come.
	for d := range results {
		dst := bufs[d.tensor].Slice(d.chunk*randomChunk, len(d.f32))
		if dst.DType() == kernels.BF16 {
			be.UploadBF16(dst, d.bf16)
		} else {
			be.Upload(dst, d.f32)
		}
		select {
		case free <- done{f32: d.f32[:cap(d.f32)], bf16: d.bf16[:cap(d.bf16)]}:
		default:
		}
	}
	if cfg.TieWordEmbeddings {
		m.W.LMHead = m.W.Embed
	}
	return m
}

// randomDType is the dtype a random model of weights dt keeps the tensor
// in: f32 where a loaded checkpoint's would be f32 whatever its dtype
// (Load: the f32-only tensors such as Mamba-2's A_log, dt_bias and D, which
// the recurrent kernels read in f32, and the (1+w) norms), else dt.
func (sp tensorSpec) randomDType(dt kernels.DType) kernels.DType {
	if sp.f32 || sp.plusOne {
		return kernels.F32
	}
	return dt
}

// fillRandom writes chunk's values of tensor: ones for a norm, else
// Irwin–Hall(4) values of std 0.02 from the chunk's own PCG stream.
func fillRandom(v []float32, seed uint64, tensor, chunk int, norm bool) {
	if norm {
		for i := range v {
			v[i] = 1
		}
		return
	}
	// Four uniforms (k+½)/2¹⁶ sum to mean 2 and variance 4·(1−2⁻³²)/12;
	// scale makes the std 0.02.
	const sum = 4 * 65536
	scale := 0.02 / math.Sqrt(4*(1-math.Pow(2, -32))/12) / 65536
	rng := rand.NewPCG(seed, splitmix64(uint64(tensor)<<32|uint64(chunk)))
	for i := range v {
		x := rng.Uint64()
		s := float64(x&0xffff+x>>16&0xffff+x>>32&0xffff+x>>48) + 2 // Σ(k+½)
		v[i] = float32((s - sum/2) * scale)
	}
}

// splitmix64 scatters a chunk's (tensor, chunk) index over the PCG state
// space, so neighbouring chunks do not start from neighbouring states.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
