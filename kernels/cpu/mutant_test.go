package cpu_test

import (
	"math"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// The suite must be able to fail. Each mutant below is the CPU backend
// with one op broken the way real kernels break; kerneltest.Check on that
// op must report it.

// attendsOneFurther reads one cache position past pos[t] (an off-by-one in
// the causal mask).
type attendsOneFurther struct{ *cpu.Backend }

func (m attendsOneFurther) Attention(out, lse, q, k, v, seq, pos kernels.Buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, variant kernels.AttentionVariant) {
	shifted := m.Alloc(kernels.I32, nTok)
	defer m.Free(shifted)
	for t, p := range cpu.Int32s(pos)[:nTok] {
		cpu.Int32s(shifted)[t] = min(p+1, int32(pages.MaxLen()-1))
	}
	m.Backend.Attention(out, lse, q, k, v, seq, shifted, pages, nTok, nHead, nKV, headDim, scale, variant)
}

// ignoresBlockTable reads each sequence's positions from consecutive cache
// rows starting at its first block, as a contiguous cache would.
type ignoresBlockTable struct{ *cpu.Backend }

func (m ignoresBlockTable) Attention(out, lse, q, k, v, seq, pos kernels.Buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, variant kernels.AttentionVariant) {
	table := cpu.Int32s(pages.Table)
	flat := m.Alloc(kernels.I32, len(table))
	defer m.Free(flat)
	for s := range pages.Seqs() {
		for j := range pages.MaxBlocks {
			cpu.Int32s(flat)[s*pages.MaxBlocks+j] = table[s*pages.MaxBlocks] + int32(j)
		}
	}
	pages.Table = flat
	m.Backend.Attention(out, lse, q, k, v, seq, pos, pages, nTok, nHead, nKV, headDim, scale, variant)
}

// dropsEps normalises by sqrt(mean(x²)) without eps.
type dropsEps struct{ *cpu.Backend }

func (m dropsEps) RMSNorm(out, rstd, x, w kernels.Buffer, rows, dim int, eps float32) {
	xs, ws, os := cpu.Float32s(x), cpu.Float32s(w), cpu.Float32s(out)
	for r := range rows {
		ss := 0.0
		for _, v := range xs[r*dim : (r+1)*dim] {
			ss += float64(v) * float64(v)
		}
		inv := 1 / math.Sqrt(ss/float64(dim))
		for i := range dim {
			os[r*dim+i] = float32(float64(xs[r*dim+i]) * inv * float64(ws[i]))
		}
		if rstd != nil {
			cpu.Float32s(rstd)[r] = float32(inv)
		}
	}
}

// readsCWhenBetaZero computes beta·C even when beta is 0 (NaN·0 = NaN).
type readsCWhenBetaZero struct{ *cpu.Backend }

func (m readsCWhenBetaZero) MatMul(c, a, b kernels.Buffer, mm, n, k int, tA, tB bool, alpha, beta float32) {
	cs := cpu.Float32s(c)[:mm*n]
	old := append([]float32(nil), cs...)
	m.Backend.MatMul(c, a, b, mm, n, k, tA, tB, alpha, 0)
	for i := range cs {
		cs[i] += beta * old[i]
	}
}

// noMaxSubtraction computes log Σ e^x directly in float32.
type noMaxSubtraction struct{ *cpu.Backend }

func (m noMaxSubtraction) LogSoftmaxGather(logp, entropy, logits, target kernels.Buffer, rows, vocab int) {
	xs, ts := cpu.Float32s(logits), cpu.Int32s(target)
	for r := range rows {
		var z, zx float32
		for _, v := range xs[r*vocab : (r+1)*vocab] {
			e := float32(math.Exp(float64(v)))
			z += e
			zx += e * v
		}
		lse := float32(math.Log(float64(z)))
		cpu.Float32s(logp)[r] = xs[r*vocab+int(ts[r])] - lse
		if entropy != nil {
			cpu.Float32s(entropy)[r] = lse - zx/z
		}
	}
}

// ignoresInverse always rotates forward.
type ignoresInverse struct{ *cpu.Backend }

func (m ignoresInverse) RoPE(x, pos, invFreq kernels.Buffer, nTok, nHead, headDim int, inverse bool) {
	m.Backend.RoPE(x, pos, invFreq, nTok, nHead, headDim, false)
}

// overflowingSilu computes σ(g) as e^g/(1+e^g) in float32.
type overflowingSilu struct{ *cpu.Backend }

func (m overflowingSilu) SwiGLU(out, gate, up kernels.Buffer, n int) {
	gs, us, os := cpu.Float32s(gate), cpu.Float32s(up), cpu.Float32s(out)
	for i := range n {
		e := float32(math.Exp(float64(gs[i])))
		os[i] = gs[i] * e / (1 + e) * us[i]
	}
}

// overflowingSigmoid computes σ(g) as e^g/(1+e^g) in float32.
type overflowingSigmoid struct{ *cpu.Backend }

func (m overflowingSigmoid) SigmoidGate(out, x, gate kernels.Buffer, n int) {
	gs, xs, os := cpu.Float32s(gate), cpu.Float32s(x), cpu.Float32s(out)
	for i := range n {
		e := float32(math.Exp(float64(gs[i])))
		os[i] = xs[i] * e / (1 + e)
	}
}

// rotatesWholeHead ignores partial rotary: it rotates all of each head,
// repeating invFreq's rotaryDim/2 frequencies to fill headDim/2.
type rotatesWholeHead struct{ *cpu.Backend }

func (m rotatesWholeHead) AttentionInputs(q, gate, qPre, kPre, rstdQ, rstdK, kCache, vCache, qkv, qBias, kBias, vBias, qNorm, kNorm, invFreq, seq, pos kernels.Buffer,
	pages kernels.KVPages, nTok, nHead, nKV, headDim, rotaryDim int, eps float32) {
	f := make([]float32, rotaryDim/2)
	m.Download(f, invFreq.Slice(0, rotaryDim/2))
	wide := make([]float32, headDim/2)
	for i := range wide {
		wide[i] = f[i%len(f)]
	}
	inv := m.Alloc(kernels.F32, len(wide))
	defer m.Free(inv)
	m.Upload(inv, wide)
	m.Backend.AttentionInputs(q, gate, qPre, kPre, rstdQ, rstdK, kCache, vCache, qkv, qBias, kBias, vBias, qNorm, kNorm, inv, seq, pos,
		pages, nTok, nHead, nKV, headDim, headDim, eps)
}

// clobbersInput computes out = a + b but leaves a scratch value in a.
type clobbersInput struct{ *cpu.Backend }

func (m clobbersInput) Add(out, a, b kernels.Buffer, n int) {
	m.Backend.Add(out, a, b, n)
	cpu.Float32s(a)[0] = cpu.Float32s(out)[0]
}

// sharesKVHeadsWrongly maps query head h to KV head h % nKV instead of
// h / (nHead/nKV), which only matters when nHead > nKV > 1.
type sharesKVHeadsWrongly struct{ *cpu.Backend }

func (m sharesKVHeadsWrongly) Attention(out, lse, q, k, v, seq, pos kernels.Buffer, pages kernels.KVPages, nTok, nHead, nKV, headDim int, scale float32, variant kernels.AttentionVariant) {
	group := nHead / nKV
	// Permute q's heads so that the correct mapping applied to the permuted
	// q is the wrong mapping applied to the original, then permute back.
	perm := func(h int) int { return (h%nKV)*group + h/nKV }
	qs := cpu.Float32s(q)
	pq := m.Alloc(kernels.F32, nTok*nHead*headDim)
	defer m.Free(pq)
	for t := range nTok {
		for h := range nHead {
			copy(cpu.Float32s(pq)[(t*nHead+perm(h))*headDim:][:headDim], qs[(t*nHead+h)*headDim:][:headDim])
		}
	}
	m.Backend.Attention(out, lse, pq, k, v, seq, pos, pages, nTok, nHead, nKV, headDim, scale, variant)
	os := cpu.Float32s(out)
	tmp := append([]float32(nil), os[:nTok*nHead*headDim]...)
	for t := range nTok {
		for h := range nHead {
			copy(os[(t*nHead+h)*headDim:][:headDim], tmp[(t*nHead+perm(h))*headDim:][:headDim])
		}
	}
	if lse != nil {
		ls := cpu.Float32s(lse)
		tl := append([]float32(nil), ls[:nTok*nHead]...)
		for t := range nTok {
			for h := range nHead {
				ls[t*nHead+h] = tl[t*nHead+perm(h)]
			}
		}
	}
}

// mutant is a backend broken on purpose in one op, with what is wrong
// with it; check is the suite that must catch it (kerneltest.Check or
// CheckTrain; nil: Check).
type mutant struct {
	op, why string
	b       kernels.Backend
	check   func(kernels.Backend, ...string) error
}

// requireMutantsFail runs each mutant's op through its suite, first on
// base (which must pass it), then on the mutant, which must fail it.
func requireMutantsFail(t *testing.T, base kernels.Backend, mutants []mutant) {
	t.Helper()
	checked := map[string]bool{}
	for _, m := range mutants {
		check := m.check
		if check == nil {
			check = kerneltest.Check
		}
		if !checked[m.op] {
			if err := check(base, m.op); err != nil {
				t.Fatalf("unbroken backend fails %s: %v", m.op, err)
			}
			checked[m.op] = true
		}
		err := check(m.b, m.op)
		if err == nil {
			t.Errorf("%s that %s passes the suite", m.op, m.why)
			continue
		}
		first, _, _ := strings.Cut(err.Error(), "\n")
		t.Logf("%s that %s: %d failing cases, first: %s", m.op, m.why, strings.Count(err.Error(), "\n")+1, first)
	}
}

func TestSuiteCatchesBrokenOps(t *testing.T) {
	base := cpu.New()
	requireMutantsFail(t, base, []mutant{
		{"Attention", "attends to pos+1", attendsOneFurther{base}, nil},
		{"Attention", "maps query head h to KV head h%nKV", sharesKVHeadsWrongly{base}, nil},
		{"Attention", "ignores the block table past a sequence's first block", ignoresBlockTable{base}, nil},
		{"RMSNorm", "drops eps", dropsEps{base}, nil},
		{"MatMul", "reads C when beta = 0", readsCWhenBetaZero{base}, nil},
		{"LogSoftmaxGather", "no max subtraction", noMaxSubtraction{base}, nil},
		{"RoPE", "ignores inverse", ignoresInverse{base}, nil},
		{"SwiGLU", "σ(g) = e^g/(1+e^g) overflows", overflowingSilu{base}, nil},
		{"SigmoidGate", "σ(g) = e^g/(1+e^g) overflows", overflowingSigmoid{base}, nil},
		{"AttentionInputs", "rotates the whole head", rotatesWholeHead{base}, nil},
		{"Add", "writes its input", clobbersInput{base}, nil},
	})
}

// The C kernels can break where plain loops cannot: in one lane of a
// vector, or in the tail after the last full vector. vec_kernels.h builds
// two broken copies of the widest kernels (cpu.WithFault) and every op
// that runs the vector exp must fail the suite with either.
func TestSuiteCatchesBrokenVectorKernels(t *testing.T) {
	if cpu.New().KernelsName() == "go" {
		t.Skip("no C kernels (CGO_ENABLED=0 or GRPO_CPU_KERNELS=go)")
	}
	ops := []struct {
		op    string
		check func(kernels.Backend, ...string) error
	}{
		{"SwiGLU", kerneltest.Check},
		{"LogSoftmaxGather", kerneltest.Check},
		{"Attention", kerneltest.Check},
		{"SwiGLUBackward", kerneltest.CheckTrain},
		{"LogSoftmaxGatherBackward", kerneltest.CheckTrain},
		{"AttentionBackward", kerneltest.CheckTrain},
		{"Sample", func(b kernels.Backend, _ ...string) error { return kerneltest.CheckSample(b) }},
	}
	for _, f := range []struct {
		fault int
		why   string
	}{{1, "lane 3 of the vector exp skips 2^k"}, {2, "the exp tail drops its last element"}} {
		why := f.why
		b := cpu.New(cpu.WithFault(f.fault))
		for _, o := range ops {
			err := o.check(b, o.op)
			if err == nil {
				t.Errorf("%s on %s kernels where %s passes the suite", o.op, b.KernelsName(), why)
				continue
			}
			t.Logf("%s where %s: %d failing cases, first: %s", o.op, why, strings.Count(err.Error(), "\n")+1, firstLine(err.Error()))
		}
	}
}
