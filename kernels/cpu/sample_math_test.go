package cpu

import (
	"encoding/json"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"gonum.org/v1/gonum/stat/distuv"
)

// The sampling math's own tests, moved here from sampler/pick_test.go with
// the math (kernels.SampleOps.Sample): draw frequencies against the
// definitions, greedy ties, the heap against a full sort, and the golden
// draws of the host sampler before the move.

// goldenRow regenerates row spec ri of testdata/sample_golden.json exactly
// as the generator did (PCG streams are stable across Go releases).
func goldenRow(kind, vocab int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 77))
	row := make([]float32, vocab)
	for i := range row {
		switch kind {
		case 0:
			row[i] = float32(rng.NormFloat64() * 3)
		case 1:
			row[i] = float32(math.Round(rng.NormFloat64()*3*4) / 4)
		case 2:
			if rng.IntN(4) == 0 {
				row[i] = float32(math.Inf(-1))
			} else {
				row[i] = float32(rng.NormFloat64() * 2)
			}
		}
	}
	return row
}

// TestSampleMatchesHostSamplerGolden: testdata/sample_golden.json holds 336
// draws (six rows up to 151,936 wide with ties and −Inf, 14 parameter
// sets, u = 0, u just below 1 and two seeded draws) made by the sampler's
// host pick (sampler/pick.go at commit 562125b) before sampling became a
// Backend op. Sample must reproduce every token and every float64
// log-prob bit for bit, rounded to float32 as the op stores it.
// Every kernel path must: the C kernels' float64 exp is not math.Exp's,
// but within an ulp of it, which moves no draw.
func TestSampleMatchesHostSamplerGolden(t *testing.T) {
	for _, k := range AvailableKernels() {
		t.Run("kernels="+string(k), func(t *testing.T) { checkSampleGolden(t, New(WithKernels(k))) })
	}
}

func checkSampleGolden(t *testing.T, be *Backend) {
	b, err := os.ReadFile("testdata/sample_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var draws []struct {
		Row         int     `json:"row"`
		Temperature float64 `json:"temperature"`
		TopP        float64 `json:"top_p"`
		MinP        float64 `json:"min_p"`
		TopK        int     `json:"top_k"`
		U           float64 `json:"u"`
		Token       int32   `json:"token"`
		Logprob     uint64  `json:"logprob_bits"`
	}
	if err := json.Unmarshal(b, &draws); err != nil {
		t.Fatal(err)
	}
	specs := []struct{ kind, vocab int }{{0, 151936}, {1, 151936}, {2, 5003}, {1, 997}, {0, 1}, {1, 7}}
	bufs := make([]kernels.Buffer, len(specs))
	for ri, s := range specs {
		bufs[ri] = be.Alloc(kernels.F32, s.vocab)
		be.Upload(bufs[ri], goldenRow(s.kind, s.vocab, uint64(ri)))
	}
	tok, lp := be.Alloc(kernels.I32, 1), be.Alloc(kernels.F32, 1)
	for i, d := range draws {
		p := kernels.SampleParams{Temperature: d.Temperature, TopP: d.TopP, MinP: d.MinP, TopK: d.TopK}
		be.Sample(tok, lp, bufs[d.Row], 1, specs[d.Row].vocab, []float64{d.U}, []kernels.SampleParams{p})
		want := float32(math.Float64frombits(d.Logprob))
		if got := Int32s(tok)[0]; got != d.Token {
			t.Errorf("draw %d (row %d, %+v, u %v): token %d, golden %d", i, d.Row, p, d.U, got, d.Token)
		} else if got := Float32s(lp)[0]; math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("draw %d (row %d, %+v, u %v): log-prob %v, golden %v", i, d.Row, p, d.U, got, want)
		}
	}
	if len(draws) != 336 {
		t.Errorf("%d golden draws, want 336", len(draws))
	}
}

// refDist is the processed distribution written out plainly, independent
// of pick's heap and log-space shortcuts: softmax at temperature, then
// min-p, top-k and top-p by a full sort (ties to the lower id), each
// followed by renormalisation.
func refDist(logits []float64, p kernels.SampleParams) []float64 {
	n := len(logits)
	probs := make([]float64, n)
	mx := slices.Max(logits)
	for i, x := range logits {
		probs[i] = math.Exp((x - mx) / p.Temperature)
	}
	norm := func() {
		var s float64
		for _, v := range probs {
			s += v
		}
		for i := range probs {
			probs[i] /= s
		}
	}
	norm()
	if p.MinP > 0 {
		pmax := slices.Max(probs)
		for i := range probs {
			if probs[i] < p.MinP*pmax {
				probs[i] = 0
			}
		}
		norm()
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return probs[order[a]] > probs[order[b]] })
	if p.TopK > 0 {
		for r, i := range order {
			if r >= p.TopK {
				probs[i] = 0
			}
		}
		norm()
	}
	if p.TopP < 1 {
		var cum float64
		cut := false
		for _, i := range order {
			if cut {
				probs[i] = 0
				continue
			}
			cum += probs[i]
			cut = cum >= p.TopP
		}
		norm()
	}
	return probs
}

// chiSquareP draws n tokens with pick and returns the p-value of the
// counts against want (a token with want 0 that is drawn gives p = 0).
func chiSquareP(t *testing.T, logits []float64, p kernels.SampleParams, want []float64, n int, seed uint64) float64 {
	t.Helper()
	row := make([]float32, len(logits))
	for i, x := range logits {
		row[i] = float32(x)
	}
	counts := make([]int, len(row))
	var pk picker
	rng := rand.New(rand.NewPCG(seed, 1))
	for range n {
		tok, _ := pk.pick(row, &p, rng.Float64())
		counts[tok]++
	}
	var stat float64
	df := -1
	for i, c := range counts {
		if want[i] == 0 {
			if c > 0 {
				return 0
			}
			continue
		}
		e := want[i] * float64(n)
		stat += (float64(c) - e) * (float64(c) - e) / e
		df++
	}
	if df < 1 {
		return 1
	}
	return distuv.ChiSquared{K: float64(df)}.Survival(stat)
}

// pValueFloor: a sampler that matches its definition fails with
// probability 0.001 per case; the seeds are fixed, so the outcome is too.
const pValueFloor = 1e-3

// fixedLogits: eight tokens with a tie between ids 2 and 3 at the top-k and
// top-p boundaries, so a wrong tie-break moves mass to a token the
// reference gives none. They are float32 values, as pick sees them.
func fixedLogits() []float64 {
	probs := []float64{0.30, 0.20, 0.15, 0.15, 0.10, 0.05, 0.03, 0.02}
	l := make([]float64, len(probs))
	for i, p := range probs {
		l[i] = float64(float32(math.Log(p)))
	}
	return l
}

func plain() kernels.SampleParams { return kernels.SampleParams{Temperature: 1, TopP: 1} }

func TestSamplingFrequenciesMatchDefinitions(t *testing.T) {
	logits := fixedLogits()
	cases := map[string]func(p *kernels.SampleParams){
		"plain":       func(p *kernels.SampleParams) {},
		"temperature": func(p *kernels.SampleParams) { p.Temperature = 0.6 },
		"hot":         func(p *kernels.SampleParams) { p.Temperature = 1.7 },
		"top_k":       func(p *kernels.SampleParams) { p.TopK = 3 },
		"top_p":       func(p *kernels.SampleParams) { p.TopP = 0.6 },
		"top_p_tiny":  func(p *kernels.SampleParams) { p.TopP = 0.01 },
		"min_p":       func(p *kernels.SampleParams) { p.MinP = 0.4 },
		"combined":    func(p *kernels.SampleParams) { p.Temperature = 1.3; p.MinP = 0.1; p.TopK = 5; p.TopP = 0.8 },
		"k_then_p":    func(p *kernels.SampleParams) { p.TopK = 4; p.TopP = 0.7 },
	}
	seed := uint64(11)
	for _, name := range slices.Sorted(maps.Keys(cases)) { // fixed seeds per case
		edit := cases[name]
		t.Run(name, func(t *testing.T) {
			p := plain()
			edit(&p)
			want := refDist(logits, p)
			if pv := chiSquareP(t, logits, p, want, 200_000, seed); pv < pValueFloor {
				t.Errorf("frequencies differ from the definition: p-value %.3g < %g (want %v)", pv, pValueFloor, want)
			}
		})
		seed++
	}
}

// TestChiSquareHasPower shows the frequency test can fail: top-k sampling
// judged against the untruncated distribution, and temperature-1 draws
// against temperature 1.05, must both be rejected.
func TestChiSquareHasPower(t *testing.T) {
	logits := fixedLogits()
	p := plain()
	p.TopK = 5
	if pv := chiSquareP(t, logits, p, refDist(logits, plain()), 200_000, 3); pv >= pValueFloor {
		t.Errorf("top-k draws passed as untruncated: p-value %.3g", pv)
	}
	hot := plain()
	hot.Temperature = 1.05
	if pv := chiSquareP(t, logits, plain(), refDist(logits, hot), 200_000, 4); pv >= pValueFloor {
		t.Errorf("temperature 1 draws passed as temperature 1.05: p-value %.3g", pv)
	}
}

func TestGreedyIsArgmaxWithLowestIDOnTies(t *testing.T) {
	row := []float32{0.5, 2, -1, 2, 1.9}
	if got := argmax(row); got != 1 {
		t.Errorf("argmax = %d, want 1 (first of the tied maxima)", got)
	}
}

// TestTruncateMatchesFullSort checks the heap's partial selection against
// a full sort on a Qwen-sized vocabulary with many tied logits.
func TestTruncateMatchesFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const vocab = 151_936
	row := make([]float32, vocab)
	for i := range row {
		// Quantised so that ties are common.
		row[i] = float32(math.Round(rng.NormFloat64()*3*8) / 8)
	}
	var pk picker
	for _, c := range []struct {
		k    int
		topP float64
	}{{50, 1}, {1, 1}, {vocab, 0.9}, {vocab, 0.3}, {1000, 0.95}, {20, 0.5}} {
		cands := make([]cand, vocab)
		mx := float64(slices.Max(row))
		for i, x := range row {
			cands[i] = cand{int32(i), math.Exp(float64(x) - mx)}
		}
		want := slices.Clone(cands)
		sort.Slice(want, func(a, b int) bool { return want[a].before(want[b]) })
		want = want[:c.k]
		if c.topP < 1 {
			var z, cum float64
			for _, w := range want {
				z += w.w
			}
			n := 0
			for n < len(want) {
				cum += want[n].w
				n++
				if cum >= c.topP*z {
					break
				}
			}
			want = want[:n]
		}
		got := pk.truncate(cands, c.k, c.topP)
		if len(got) != len(want) {
			t.Errorf("k=%d top_p=%v: kept %d tokens, want %d", c.k, c.topP, len(got), len(want))
			continue
		}
		for i := range got {
			if got[i].id != want[i].id {
				t.Errorf("k=%d top_p=%v: kept[%d] = id %d, want %d", c.k, c.topP, i, got[i].id, want[i].id)
				break
			}
		}
	}
}

func BenchmarkPick151k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	row := make([]float32, 151_936)
	for i := range row {
		row[i] = float32(rng.NormFloat64() * 3)
	}
	for _, c := range []struct {
		name string
		edit func(p *kernels.SampleParams)
	}{
		{"plain", func(p *kernels.SampleParams) {}},
		{"top_p0.95", func(p *kernels.SampleParams) { p.TopP = 0.95 }},
		{"top_k50", func(p *kernels.SampleParams) { p.TopK = 50 }},
		{"min_p0.05", func(p *kernels.SampleParams) { p.MinP = 0.05 }},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := plain()
			c.edit(&p)
			var pk picker
			for b.Loop() {
				pk.pick(row, &p, rng.Float64())
			}
		})
	}
}
