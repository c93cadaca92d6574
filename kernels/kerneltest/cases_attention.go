package kerneltest

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// tok is one query token: its cache slot and position.
type tok struct{ slot, pos int32 }

// run returns tokens of one slot at positions from..to inclusive.
func run(slot, from, to int32) []tok {
	var ts []tok
	for p := from; p <= to; p++ {
		ts = append(ts, tok{slot, p})
	}
	return ts
}

func cat(runs ...[]tok) []tok {
	var ts []tok
	for _, r := range runs {
		ts = append(ts, r...)
	}
	return ts
}

func kvWriteCases() []Case {
	type shape struct {
		slots, maxLen, width int
		toks                 []tok
	}
	shapes := []shape{
		{1, 1, 1, []tok{{0, 0}}},
		{3, 9, 16, cat(run(2, 0, 3), []tok{{0, 8}, {1, 5}})},
		{2, 40, 128, cat(run(1, 10, 30), run(0, 0, 0))},
	}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(900+i)
		cs = append(cs, Case{Op: "KVWrite", Name: fmt.Sprintf("slots=%d,maxLen=%d,width=%d,nTok=%d", s.slots, s.maxLen, s.width, len(s.toks)),
			check: func(b kernels.Backend) error {
				e := newEnv(b, seed)
				defer e.free()
				n := len(s.toks)
				slotv, posv := make([]int32, n), make([]int32, n)
				for t, tk := range s.toks {
					slotv[t], posv[t] = tk.slot, tk.pos
				}
				cache := e.out("cache", e.uniform(s.slots*s.maxLen*s.width, 1)) // rows not written must survive
				x := e.in("x", e.uniform(n*s.width, 1))
				slot, pos := e.ints("slot", slotv), e.ints("pos", posv)
				want := RefKVWrite(cache.values(), x.values(), slotv, posv, n, s.width, s.maxLen)
				b.KVWrite(cache.view, x.view, slot.view, pos.view, n, s.width, s.maxLen)
				if err := e.checkAll(); err != nil {
					return err
				}
				return Compare("cache", cache.result(b), want, tolExact)
			}})
	}
	return cs
}

type attnShape struct {
	name                string
	nHead, nKV, headDim int
	slots, maxLen       int
	toks                []tok
	qScale              float64 // magnitude of q; large values test max-subtraction
	lse                 bool
}

// attentionCases cover prefill, decode (one token per slot at different
// positions), packed prefill of several slots of different lengths
// (including one continuing after a cached prefix, and tokens in shuffled
// order), GQA ratios 1, 2 and 4, headDim 16, 64 and 128, a 300-token
// prefill, scores large enough that exp without max-subtraction overflows,
// and the optional lse output. Cache positions beyond the last one any
// token of a slot may read hold NaN, so reading past pos[t] poisons the
// output.
func attentionCases() []Case {
	shuffled := cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 0))
	for i := range shuffled { // fixed permutation: interleave slots
		j := (i * 7) % len(shuffled)
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	}
	shapes := []attnShape{
		{"single", 1, 1, 16, 1, 1, []tok{{0, 0}}, 1, true},
		{"prefill", 4, 4, 16, 1, 16, run(0, 0, 12), 1, false},
		{"prefill-gqa2", 4, 2, 64, 2, 20, run(1, 0, 9), 1, true},
		{"decode-gqa4", 8, 2, 64, 3, 40, []tok{{0, 17}, {1, 0}, {2, 39}}, 1, true},
		{"decode-gqa1", 2, 2, 16, 4, 10, []tok{{3, 9}, {0, 4}, {2, 1}, {1, 0}}, 1, false},
		{"packed-gqa2", 4, 2, 64, 3, 12, cat(run(1, 0, 6), run(0, 5, 9), run(2, 0, 0)), 1, true},
		{"packed-shuffled-gqa4", 4, 1, 16, 3, 12, shuffled, 1, true},
		{"large-scores", 2, 1, 16, 1, 8, run(0, 0, 7), 200, true},
		{"headdim128", 2, 1, 128, 2, 33, cat(run(0, 0, 32), run(1, 0, 4)), 1, true},
		{"prefill300", 4, 2, 64, 1, 300, run(0, 0, 299), 1, true},
	}
	var cs []Case
	for i, s := range shapes {
		s, seed := s, uint64(1000+i)
		cs = append(cs, Case{Op: "Attention",
			Name:  fmt.Sprintf("%s,nHead=%d,nKV=%d,headDim=%d,nTok=%d,lse=%v", s.name, s.nHead, s.nKV, s.headDim, len(s.toks), s.lse),
			check: func(b kernels.Backend) error { return checkAttention(b, seed, s) }})
	}
	return cs
}

func checkAttention(b kernels.Backend, seed uint64, s attnShape) error {
	e := newEnv(b, seed)
	defer e.free()
	n := len(s.toks)
	slotv, posv := make([]int32, n), make([]int32, n)
	valid := make([]int32, s.slots) // per slot, number of readable positions
	for t, tk := range s.toks {
		slotv[t], posv[t] = tk.slot, tk.pos
		valid[tk.slot] = max(valid[tk.slot], tk.pos+1)
	}
	row := s.nKV * s.headDim
	kv := func() []float32 {
		v := e.uniform(s.slots*s.maxLen*row, 1)
		for sl := 0; sl < s.slots; sl++ {
			for p := int(valid[sl]); p < s.maxLen; p++ {
				for j := 0; j < row; j++ {
					v[(sl*s.maxLen+p)*row+j] = float32(math.NaN())
				}
			}
		}
		return v
	}
	q := e.in("q", e.uniform(n*s.nHead*s.headDim, s.qScale))
	k, v := e.in("kCache", kv()), e.in("vCache", kv())
	slot, pos := e.ints("slot", slotv), e.ints("pos", posv)
	out := e.out("out", nans(n*s.nHead*s.headDim))
	var lse *operand
	var lseBuf kernels.Buffer
	if s.lse {
		lse = e.out("lse", nans(n*s.nHead))
		lseBuf = lse.view
	}
	scale := float32(1 / math.Sqrt(float64(s.headDim)))
	wantOut, wantLse := RefAttention(q.values(), k.values(), v.values(), slotv, posv, n, s.nHead, s.nKV, s.headDim, s.maxLen, float64(scale))
	b.Attention(out.view, lseBuf, q.view, k.view, v.view, slot.view, pos.view, n, s.nHead, s.nKV, s.headDim, s.maxLen, scale)
	if err := e.checkAll(); err != nil {
		return err
	}
	if err := Compare("out", out.result(b), wantOut, tolMatMul); err != nil {
		return err
	}
	if s.lse {
		return Compare("lse", lse.result(b), wantLse, tolMatMul)
	}
	return nil
}
