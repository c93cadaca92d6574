package cpu

import (
	"math"
	"sync"

	"github.com/grpo-dev/grpo/kernels"
)

// Sample runs the sampling math in float64 per row, rows in parallel. Top-k
// and top-p use a heap (partial selection: heapify is O(vocab), and only
// the kept candidates are popped), never a full sort of the vocabulary.
// This is the host sampler that sampler/pick.go held before sampling
// became a Backend op, unchanged, so generation on the CPU backend gives
// the same tokens and log-probs, bit for bit, as before the move
// (testdata/sample_golden.json). With C kernels the exps are a float64
// vector exp within 2 ulp of math.Exp, summed in lanes (vec_kernels.h),
// which still reproduces every golden draw.
func (be *Backend) Sample(token, logprob, logits kernels.Buffer, rows, vocab int, u []float64, p []kernels.SampleParams) {
	const op = "Sample"
	positive(op, vocab)
	kernels.CheckSampleArgs("cpu", rows, u, p)
	if rows == 0 {
		return
	}
	xs := floats(op, "logits", logits, rows*vocab)
	tok := ints(op, "token", token, rows)
	lp := f32(op, "logprob", logprob, rows)
	be.parallel(rows, 30*vocab, func(lo, hi int) {
		pk := pickers.Get().(*picker)
		defer pickers.Put(pk)
		pk.vec = be.vec
		for r := lo; r < hi; r++ {
			t, l := pk.pick(xs[r*vocab:(r+1)*vocab], &p[r], u[r])
			tok[r], lp[r] = t, float32(l)
		}
	})
}

// pickers hold the scratch of the sampling math, reused across calls so a
// 151k vocabulary costs no allocation per token.
var pickers = sync.Pool{New: func() any { return new(picker) }}

// cand is a candidate token and its unnormalised probability under the
// processed distribution.
type cand struct {
	id int32
	w  float64
}

// before orders candidates by probability, then by lower id, so that
// truncation is deterministic when probabilities tie.
func (a cand) before(b cand) bool {
	return a.w > b.w || a.w == b.w && a.id < b.id
}

// picker is the scratch of one goroutine.
type picker struct {
	cands []cand
	kept  []cand
	vec   *vecTable // the backend's C kernels, or nil
	ws    []float64 // their per-token weights
}

// argmax is the greedy choice, ties to the lowest id.
func argmax(row []float32) int32 {
	best := 0
	for i, x := range row {
		if x > row[best] {
			best = i
		}
	}
	return int32(best)
}

// logprobMax is the log-softmax of row at tok in float64, given the row's
// maximum: the model's raw distribution (temperature 1, no truncation).
func (pk *picker) logprobMax(row []float32, tok int32, mx float64) float64 {
	var z float64
	if pk.vec != nil {
		z = pk.vec.sampleExps(pk.weights(len(row)), row, mx, 1)
	} else {
		for _, x := range row {
			z += math.Exp(float64(x) - mx)
		}
	}
	return float64(row[tok]) - mx - math.Log(z)
}

// weights is the scratch for n per-token weights.
func (pk *picker) weights(n int) []float64 {
	if cap(pk.ws) < n {
		pk.ws = make([]float64, n)
	}
	return pk.ws[:n]
}

// pick chooses a token from row under p (temperature, min-p, top-k, top-p,
// in that order) using u, and returns it with its log-prob under the raw
// distribution; a row with NaN, +Inf or no finite logit gives (−1, NaN).
// Temperature 0 is argmax and ignores u. One exp pass serves both the
// log-prob and, at temperature 1, the sampling weights.
func (pk *picker) pick(row []float32, p *kernels.SampleParams, u float64) (int32, float64) {
	mx := math.Inf(-1)
	for _, x := range row {
		if x != x || x > math.MaxFloat32 {
			return -1, math.NaN()
		}
		mx = math.Max(mx, float64(x))
	}
	if math.IsInf(mx, -1) {
		return -1, math.NaN()
	}
	if p.Temperature == 0 {
		tok := argmax(row)
		return tok, pk.logprobMax(row, tok, mx)
	}
	invT := 1 / p.Temperature
	// min-p in log space: p_i ≥ min_p·p_max ⇔ (x_i − max)/T ≥ log(min_p).
	floor := math.Inf(-1)
	if p.MinP > 0 {
		floor = math.Log(p.MinP)
	}
	cs := pk.cands[:0]
	var z1 float64 // Σ exp(x − max): the raw softmax's normaliser
	if pk.vec != nil {
		ws := pk.weights(len(row))
		z1 = pk.vec.sampleExps(ws, row, mx, invT)
		for i, x := range row {
			if s := (float64(x) - mx) * invT; s >= floor && !math.IsInf(s, -1) {
				cs = append(cs, cand{int32(i), ws[i]})
			}
		}
	} else {
		for i, x := range row {
			d := float64(x) - mx
			e := math.Exp(d)
			z1 += e
			s := d * invT
			if s >= floor && !math.IsInf(s, -1) {
				w := e
				if invT != 1 {
					w = math.Exp(s)
				}
				cs = append(cs, cand{int32(i), w})
			}
		}
	}
	pk.cands = cs
	lp := func(tok int32) float64 { return float64(row[tok]) - mx - math.Log(z1) }
	if len(cs) == 0 {
		// Unreachable with a finite maximum (its s is 0 ≥ any floor), kept
		// so a future change cannot index an empty slice.
		tok := argmax(row)
		return tok, lp(tok)
	}
	k := len(cs)
	if p.TopK > 0 && p.TopK < k {
		k = p.TopK
	}
	kept := cs
	if k < len(cs) || p.TopP < 1 {
		kept = pk.truncate(cs, k, p.TopP)
	}
	var z float64
	for _, c := range kept {
		z += c.w
	}
	target := u * z
	var cum float64
	for _, c := range kept {
		cum += c.w
		if cum > target {
			return c.id, lp(c.id)
		}
	}
	tok := kept[len(kept)-1].id
	return tok, lp(tok)
}

// truncate returns the k most likely candidates, cut further to the
// smallest prefix whose mass is at least topP of theirs, most likely first.
// It heapifies cs (O(n)) and pops only what it keeps.
func (pk *picker) truncate(cs []cand, k int, topP float64) []cand {
	heapify(cs)
	kept := pk.kept[:0]
	var z float64
	if k < len(cs) {
		for range k {
			c := pop(&cs)
			kept = append(kept, c)
			z += c.w
		}
	} else {
		for _, c := range cs {
			z += c.w
		}
	}
	pk.kept = kept
	if topP >= 1 {
		return kept
	}
	need := topP * z
	var cum float64
	for i := 0; ; i++ {
		if i == len(kept) {
			kept = append(kept, pop(&cs))
		}
		cum += kept[i].w
		if cum >= need || i == k-1 {
			pk.kept = kept
			return kept[:i+1]
		}
	}
}

// heapify arranges cs as a max-heap under before.
func heapify(cs []cand) {
	for i := len(cs)/2 - 1; i >= 0; i-- {
		siftDown(cs, i)
	}
}

func pop(cs *[]cand) cand {
	h := *cs
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	siftDown(h, 0)
	*cs = h
	return top
}

func siftDown(h []cand, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
