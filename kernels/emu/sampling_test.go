package emu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"unsafe"

	"github.com/grpo-dev/grpo/kernels/cuda"
)

// sampleParams mirror sampler.Params' sampling fields.
type sampleParams struct {
	temp, topP, minP float64
	topK             int
}

// refSample is an independent float64 reference of the sampler's pick
// (sampler/pick.go): min-p, top-k, top-p by a full sort on (weight desc,
// id asc), inverse CDF in id order when nothing is cut and in sorted order
// otherwise. It returns the token and its raw log-prob.
func refSample(row []float32, p sampleParams, u float64) (int32, float64) {
	mx := math.Inf(-1)
	best := 0
	for i, x := range row {
		mx = math.Max(mx, float64(x))
		if x > row[best] {
			best = i
		}
	}
	z1 := 0.0
	for _, x := range row {
		z1 += math.Exp(float64(x) - mx)
	}
	lp := func(t int) (int32, float64) { return int32(t), float64(row[t]) - mx - math.Log(z1) }
	if p.temp == 0 {
		return lp(best)
	}
	floor := math.Inf(-1)
	if p.minP > 0 {
		floor = math.Log(p.minP)
	}
	type cand struct {
		id int
		w  float64
	}
	var cs []cand
	for i, x := range row {
		s := (float64(x) - mx) / p.temp
		if s >= floor && !math.IsInf(s, -1) {
			cs = append(cs, cand{i, math.Exp(s)})
		}
	}
	if len(cs) == 0 {
		return lp(best)
	}
	k := len(cs)
	if p.topK > 0 && p.topK < k {
		k = p.topK
	}
	kept := cs
	if k < len(cs) || p.topP < 1 {
		sorted := append([]cand(nil), cs...)
		sort.Slice(sorted, func(a, b int) bool {
			return sorted[a].w > sorted[b].w || sorted[a].w == sorted[b].w && sorted[a].id < sorted[b].id
		})
		kept = sorted[:k]
		if p.topP < 1 {
			z := 0.0
			for _, c := range kept {
				z += c.w
			}
			cum := 0.0
			for i, c := range kept {
				cum += c.w
				if cum >= p.topP*z {
					kept = kept[:i+1]
					break
				}
			}
		}
	}
	z := 0.0
	for _, c := range kept {
		z += c.w
	}
	cum := 0.0
	for _, c := range kept {
		cum += c.w
		if cum > u*z {
			return lp(c.id)
		}
	}
	return lp(kept[len(kept)-1].id)
}

// TestSampleKernel runs sample_f32 (kernels/cuda/sampling.cu, not yet an
// op of kernels.Backend) on the emulated device over a grid of sampling
// parameters, row widths (1 to several 1024-thread chunks) and rows with
// many tied logits, and requires the reference's token exactly and its
// log-prob to float32 rounding.
func TestSampleKernel(t *testing.T) {
	d := NewDevice()
	defer d.Close()
	rng := rand.New(rand.NewPCG(7, 11))
	params := []sampleParams{
		{0, 1, 0, 0}, {1, 1, 0, 0}, {0.7, 1, 0, 0}, {1, 1, 0, 1}, {1, 1, 0, 5}, {1.3, 1, 0, 50},
		{1, 0.9, 0, 0}, {0.6, 0.3, 0, 0}, {1, 0.95, 0, 20}, {1, 1, 0.05, 0}, {0.8, 0.9, 0.02, 40},
	}
	type rowKind struct {
		name  string
		vocab int
		gen   func(i int) float32
	}
	kinds := []rowKind{
		{"one", 1, func(int) float32 { return float32(rng.NormFloat64()) }},
		{"small", 7, func(int) float32 { return float32(2 * rng.NormFloat64()) }},
		{"mid", 1000, func(int) float32 { return float32(3 * rng.NormFloat64()) }},
		{"wide", 5003, func(int) float32 { return float32(4 * rng.NormFloat64()) }},
		{"ties", 3001, func(int) float32 { return float32(rng.IntN(12)) / 2 }}, // ~250 tokens per level
		{"flat", 2100, func(int) float32 { return 0.5 }},
		{"-inf", 300, func(i int) float32 {
			if i%3 == 0 {
				return float32(math.Inf(-1))
			}
			return float32(rng.NormFloat64())
		}},
	}
	const rows = 3
	checked := 0
	for _, kind := range kinds {
		logits := make([]float32, rows*kind.vocab)
		for i := range logits {
			logits[i] = kind.gen(i % kind.vocab)
		}
		us := make([]float32, rows)
		for r := range us {
			us[r] = float32(rng.Float64())
		}
		us[0], us[rows-1] = 0, float32(math.Nextafter32(1, 0))
		for _, p := range params {
			tok, lp := runSample(t, d, logits, us, rows, kind.vocab, p)
			for r := 0; r < rows; r++ {
				// The kernel takes float32 parameters: so does the reference.
				p32 := sampleParams{float64(float32(p.temp)), float64(float32(p.topP)), float64(float32(p.minP)), p.topK}
				wantTok, wantLp := refSample(logits[r*kind.vocab:(r+1)*kind.vocab], p32, float64(us[r]))
				where := fmt.Sprintf("%s vocab %d row %d, T %g top_k %d top_p %g min_p %g u %g", kind.name, kind.vocab, r, p.temp, p.topK, p.topP, p.minP, us[r])
				if tok[r] != wantTok {
					t.Errorf("%s: token %d, want %d", where, tok[r], wantTok)
					continue
				}
				if math.Abs(float64(lp[r])-wantLp) > 1e-6*math.Max(1, math.Abs(wantLp)) {
					t.Errorf("%s: log-prob %.8g, want %.8g", where, lp[r], wantLp)
				}
				checked++
			}
		}
	}
	t.Logf("%d rows sampled as the reference", checked)
}

func runSample(t *testing.T, d *Device, logits, us []float32, rows, vocab int, p sampleParams) ([]int32, []float32) {
	t.Helper()
	alloc := func(n int) cuda.DevicePtr {
		ptr, err := d.Alloc(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		return ptr
	}
	lg, u, tok, lp := alloc(len(logits)), alloc(rows), alloc(rows), alloc(rows)
	defer func() {
		for _, ptr := range []cuda.DevicePtr{lg, u, tok, lp} {
			d.Free(ptr)
		}
	}()
	if err := d.CopyHtoD(lg, unsafe.Pointer(&logits[0]), 4*len(logits)); err != nil {
		t.Fatal(err)
	}
	if err := d.CopyHtoD(u, unsafe.Pointer(&us[0]), 4*rows); err != nil {
		t.Fatal(err)
	}
	block := max(32, min(1024, (vocab+31)/32*32))
	if err := d.Launch("sample_f32", cuda.D1(rows), cuda.D1(block), 0, tok, lp, lg, u, int32(rows), int32(vocab),
		float32(p.temp), int32(p.topK), float32(p.topP), float32(p.minP)); err != nil {
		t.Fatal(err)
	}
	toks, lps := make([]int32, rows), make([]float32, rows)
	if err := d.CopyDtoH(unsafe.Pointer(&toks[0]), tok, 4*rows); err != nil {
		t.Fatal(err)
	}
	if err := d.CopyDtoH(unsafe.Pointer(&lps[0]), lp, 4*rows); err != nil {
		t.Fatal(err)
	}
	return toks, lps
}
