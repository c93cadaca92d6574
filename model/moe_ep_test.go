package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/kernels/inproc"
)

// TestExpertParallelMatchesOneDevice: a tiny MoE sharded over two ranks
// (inproc collective), each rank training its own batch, reproduces one
// device holding every expert that runs both batches as one: each rank's
// log-probs are the one device's for its rows, and after Backward of the
// same loss gradient the replicated adapters' gradients summed over the
// ranks, and each rank's experts' gradients, are the one device's, all
// within 1e-5 relative (L2, per tensor), and so is the gradient norm.
// Each sparse layer's forward makes one ExchangeCounts and two AllToAll
// and its backward two AllToAll. On cpu: Qwen3-MoE's softmax router and
// GLM-4.5's sigmoid router with a shared expert and a dense first layer.
//
// Checkpointed (every layer under RecomputeLayer) the backward reruns
// each sparse layer's forward, exchange included: one ExchangeCounts and
// two AllToAll more per sparse layer, and the same numbers.
//
// Nemotron-H's relu² experts (with Mamba-2 layers; latent wide in
// nemotron_h-latent-tiny, whose ranks exchange latent rows) and gpt-oss's (biased,
// clamped SwiGLU; its MXFP4 form: moe_ep_gptoss_test.go) hold to 1e-5 too;
// Qwen3.5-MoE to 1e-4 (measured 3.1e-5): its gated DeltaNet layers'
// gradients on one device already differ by up to 9.5e-5 (relative L2,
// qwen3_5-tiny, no experts) between the union batch and the two batches
// run apart, so the batches' split, not the exchange, sets the bound.
func TestExpertParallelMatchesOneDevice(t *testing.T) {
	for _, c := range []struct {
		name string
		tol  float64
	}{{"qwen3-moe-tiny", 1e-5}, {"glm4_moe-tiny", 1e-5}, {"nemotron_h-tiny", 1e-5}, {"nemotron_h-latent-tiny", 1e-5}, {"gpt_oss-tiny", 1e-5}, {"qwen3_5-moe-tiny", 1e-4}} {
		for _, checkpoint := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/checkpointed=%v", c.name, checkpoint), func(t *testing.T) {
				checkExpertParallel(t, c.name, func() kernels.Backend { return cpu.New() }, checkpoint, c.tol)
			})
		}
	}
}

// TestExpertParallelMatchesOneDeviceEmu is the Qwen3-MoE case on two emu
// devices (the CUDA kernels under the emulator), and its bf16 checkpoint,
// whose every layer is a bf16 layer on the ranks as on one device
// (trace_acts.go), its rows exchanged in bf16, held to the same 1e-5
// against one emu device: the log-probs and the experts' gradients
// measured equal, the replicated adapters' gradients within 1.6e-7 (their
// sums over rows split across the ranks, then all-reduced).
func TestExpertParallelMatchesOneDeviceEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("trains under the emulator")
	}
	for _, c := range []struct {
		name string
		tol  float64
	}{{"qwen3-moe-tiny", 1e-5}, {"qwen3-moe-tiny-bf16", 1e-5}} {
		t.Run(c.name, func(t *testing.T) {
			if cfg, err := LoadConfig(filepath.Join("..", "testdata", "models", c.name)); err != nil || cfg.BF16Layers(kernels.BF16) != cfg.NumLayers {
				t.Fatalf("%s: want every layer a bf16 layer of a bf16 trace (%v)", c.name, err)
			}
			checkExpertParallel(t, c.name, func() kernels.Backend {
				b := emu.New()
				t.Cleanup(func() { b.Close() })
				return b
			}, false, c.tol)
		})
	}
}

// checkExpertParallel compares the two ranks with one device on the
// model name, holding every value to tol (relative L2).
func checkExpertParallel(t *testing.T, name string, open func() kernels.Backend, checkpoint bool, tol float64) {
	checkRanksLoaded(t, name, open, checkpoint, tol, LoadExperts)
}

// checkRanksLoaded is checkExpertParallel with the ranks' models loaded
// by loadRank (LoadExperts, or Load and ShardExperts).
func checkRanksLoaded(t *testing.T, name string, open func() kernels.Backend, checkpoint bool, tol float64, loadRank func(string, kernels.Backend, kernels.Collective) (*Model, error)) {
	const ranks = 2
	dir := filepath.Join("..", "testdata", "models", name)
	load := func() *Model {
		m, err := Load(dir, open())
		if err != nil {
			t.Fatal(err)
		}
		if checkpoint {
			m.CheckpointLayers = m.Config.NumLayers
		}
		return m
	}
	one := load()
	full := newMoETestAdapter(one, 3, 5)
	one = one.WithAdapter(full)
	rng := rand.New(rand.NewPCG(4, 2))
	var union Batch
	var unionTargets []int32
	batches, targets := make([]Batch, ranks), make([][]int32, ranks)
	for r, lens := range [][]int{{9, 6}, {7, 5, 4}} {
		for i, n := range lens {
			ids := randomIDs(rng, n+1, one.Config.VocabSize)
			batches[r].Add(i, 0, ids[:n]...)
			union.Add(len(union.Slots), 0, ids[:n]...) // a slot past the tokens so far: distinct
			targets[r] = append(targets[r], ids[1:]...)
			unionTargets = append(unionTargets, ids[1:]...)
		}
	}
	dlogp := make([]float32, union.Len())
	for i := range dlogp {
		dlogp[i] = float32(rng.NormFloat64())
	}
	wantLogp := trainOnce(t, one, &union, unionTargets, dlogp)

	g, models := openRanks(t, dir, ranks, open, loadRank)
	for r, m := range models {
		// The ranks keep the activations between ops as one device does
		// (bf16 layers, trace_acts.go), sparse layers included.
		if got, want := m.Config.BF16Layers(m.traceAttention()), one.Config.BF16Layers(one.traceAttention()); got != want {
			t.Fatalf("rank %d: %d bf16 layers, one device %d", r, got, want)
		}
		if checkpoint {
			m.CheckpointLayers = m.Config.NumLayers
		}
		models[r] = m.WithAdapter(shardTestAdapter(full, one.Backend, m))
	}
	sparse := one.Config.SparseLayers()
	logps := make([][]float32, ranks)
	var traces [ranks]*Trace
	runRanks(t, ranks, func(r int) error {
		var err error
		traces[r], err = models[r].ForwardTrain(&batches[r], nil, targets[r])
		if err != nil {
			return err
		}
		logps[r] = make([]float32, traces[r].Rows())
		models[r].Backend.Download(logps[r], traces[r].Logp)
		return models[r].Backend.Sync()
	})
	if c, a := g.Calls("counts"), g.Calls("all-to-all"); c != sparse || a != 2*sparse {
		t.Errorf("forward of %d sparse layers: %d count exchanges and %d all-to-alls, want %d and %d", sparse, c, a, sparse, 2*sparse)
	}
	off := 0
	for r := range ranks {
		checkClose(t, fmt.Sprintf("rank %d log-probs", r), logps[r], wantLogp[off:off+len(logps[r])], tol)
		off += len(logps[r])
	}
	starts := []int{0, len(logps[0])}
	runRanks(t, ranks, func(r int) error {
		n := traces[r].Rows()
		d := models[r].Backend.Alloc(kernels.F32, n)
		models[r].Backend.Upload(d, dlogp[starts[r]:starts[r]+n])
		if err := traces[r].Backward(d); err != nil {
			return err
		}
		return models[r].Backend.Sync()
	})
	reruns := 0
	if checkpoint {
		reruns = sparse
	}
	if c, a := g.Calls("counts"), g.Calls("all-to-all"); c != sparse+reruns || a != 4*sparse+2*reruns {
		t.Errorf("backward: %d count exchanges and %d all-to-alls in all, want %d and %d (two per sparse layer, and a rerun forward's)", c, a, sparse+reruns, 4*sparse+2*reruns)
	}
	checkShardedGrads(t, one, full, models, tol)
}

// trainOnce runs the forward and backward of b on m and returns the
// log-probs.
func trainOnce(t *testing.T, m *Model, b *Batch, targets []int32, dlogp []float32) []float32 {
	t.Helper()
	tr, err := m.ForwardTrain(b, nil, targets)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	lp := make([]float32, tr.Rows())
	m.Backend.Download(lp, tr.Logp)
	d := m.Backend.Alloc(kernels.F32, len(dlogp))
	m.Backend.Upload(d, dlogp)
	if err := tr.Backward(d); err != nil {
		t.Fatal(err)
	}
	if err := m.Backend.Sync(); err != nil {
		t.Fatal(err)
	}
	return lp
}

// runRanks runs f for every rank at once, one goroutine each: their
// collectives wait for each other.
// openRanks joins ranks backends from open into one in-process group
// and loads each rank's model with load (LoadExperts, or Load and
// ShardExperts).
func openRanks(t *testing.T, dir string, ranks int, open func() kernels.Backend, load func(string, kernels.Backend, kernels.Collective) (*Model, error)) (*inproc.Group, []*Model) {
	t.Helper()
	g, err := inproc.NewGroup(ranks, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	models := make([]*Model, ranks)
	for r := range ranks {
		be := open()
		coll, err := g.Join(r, be)
		if err != nil {
			t.Fatal(err)
		}
		if models[r], err = load(dir, be, coll); err != nil {
			t.Fatal(err)
		}
	}
	return g, models
}

func runRanks(t *testing.T, ranks int, f func(r int) error) {
	t.Helper()
	errs := make([]error, ranks)
	var wg sync.WaitGroup
	for r := range ranks {
		wg.Go(func() { errs[r] = f(r) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// shardTestAdapter copies full's values (on fullBe) onto m's backend,
// keeping of each sparse layer's experts only m's own.
func shardTestAdapter(full *moeTestAdapter, fullBe kernels.Backend, m *Model) *moeTestAdapter {
	be, c := m.Backend, m.Config
	first, n := m.LocalExperts()
	copyOf := func(b kernels.Buffer, off, len int) kernels.Buffer {
		v := make([]float32, b.Len())
		fullBe.Download(v, b)
		out := be.Alloc(kernels.F32, len)
		be.Upload(out, v[off:off+len])
		return out
	}
	whole := func(b kernels.Buffer) kernels.Buffer { return copyOf(b, 0, b.Len()) }
	ad := &moeTestAdapter{testAdapter: &testAdapter{l: make([][NumProj]*LoRA, c.NumLayers)},
		experts: make([][NumProj]*ExpertLoRA, c.NumLayers), routers: make([]*LoRA, c.NumLayers)}
	lora := func(l *LoRA) *LoRA {
		if l == nil {
			return nil
		}
		return &LoRA{A: whole(l.A), B: whole(l.B), Rank: l.Rank, Scale: l.Scale,
			DA: be.Alloc(kernels.F32, l.DA.Len()), DB: be.Alloc(kernels.F32, l.DB.Len())}
	}
	for l := range c.NumLayers {
		for p := range NumProj {
			ad.l[l][p] = lora(full.l[l][p])
		}
		ad.routers[l] = lora(full.routers[l])
		for p, e := range full.experts[l] {
			if e == nil {
				continue
			}
			a, b := e.A.Len()/c.NumExperts, e.B.Len()/c.NumExperts
			ad.experts[l][p] = &ExpertLoRA{A: copyOf(e.A, first*a, n*a), B: copyOf(e.B, first*b, n*b), Rank: e.Rank, Scale: e.Scale,
				DA: be.Alloc(kernels.F32, n*a), DB: be.Alloc(kernels.F32, n*b)}
		}
	}
	return ad
}

// checkShardedGrads compares the ranks' gradients with one device's:
// the replicated adapters' summed over the ranks, the experts' stacks as
// slices of the one device's, and the norm of them all.
func checkShardedGrads(t *testing.T, one *Model, full *moeTestAdapter, models []*Model, tol float64) {
	t.Helper()
	c := one.Config
	down := func(be kernels.Backend, b kernels.Buffer) []float32 {
		v := make([]float32, b.Len())
		be.Download(v, b)
		return v
	}
	var wantSq, gotSq float64
	for l := range c.NumLayers {
		names, want := replicatedGrads(full, l)
		for i, w := range want {
			wv := down(one.Backend, w)
			sum := make([]float32, len(wv))
			for _, m := range models {
				_, got := replicatedGrads(m.Adapter.(*moeTestAdapter), l)
				for k, v := range down(m.Backend, got[i]) {
					sum[k] += v
				}
			}
			checkClose(t, fmt.Sprintf("layer %d %s", l, names[i]), sum, wv, tol)
			wantSq, gotSq = wantSq+sumSq(wv), gotSq+sumSq(sum)
		}
		for p, e := range full.experts[l] {
			if e == nil {
				continue
			}
			for j, want := range []kernels.Buffer{e.DA, e.DB} {
				w := down(one.Backend, want)
				per := len(w) / c.NumExperts
				for r, m := range models {
					first, n := m.LocalExperts()
					le := m.Adapter.(*moeTestAdapter).experts[l][p]
					got := down(m.Backend, [2]kernels.Buffer{le.DA, le.DB}[j])
					checkClose(t, fmt.Sprintf("layer %d rank %d experts' %v gradient %d", l, r, Proj(p), j), got, w[first*per:(first+n)*per], tol)
					gotSq += sumSq(got)
				}
				wantSq += sumSq(w)
			}
		}
	}
	if d := math.Abs(math.Sqrt(gotSq)-math.Sqrt(wantSq)) / math.Sqrt(wantSq); !(d <= tol) {
		t.Errorf("gradient norm %v under expert parallelism, %v on one device: relative difference %.2g", math.Sqrt(gotSq), math.Sqrt(wantSq), d)
	}
}

// replicatedGrads lists layer l's gradients of the adapters every rank
// holds whole: the projections' and the router's, DA then DB.
func replicatedGrads(ad *moeTestAdapter, l int) (names []string, bufs []kernels.Buffer) {
	for p, lr := range ad.l[l] {
		if lr != nil {
			names = append(names, Proj(p).String()+" DA", Proj(p).String()+" DB")
			bufs = append(bufs, lr.DA, lr.DB)
		}
	}
	if lr := ad.routers[l]; lr != nil {
		names = append(names, "router DA", "router DB")
		bufs = append(bufs, lr.DA, lr.DB)
	}
	return names, bufs
}

// checkClose fails unless got is want within tol relative (L2).
func checkClose(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	var d, w float64
	for i := range want {
		d += (float64(got[i]) - float64(want[i])) * (float64(got[i]) - float64(want[i]))
		w += float64(want[i]) * float64(want[i])
	}
	if len(got) != len(want) || !(math.Sqrt(d) <= tol*math.Sqrt(w)) {
		t.Errorf("%s: relative L2 difference %.3g (of |want| %.3g, %d values), want ≤ %g", what, math.Sqrt(d/w), math.Sqrt(w), len(want), tol)
	}
}

func sumSq(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return s
}

// TestExpertParallelPeerMissing: a rank whose peer never runs its
// forward gets an error from ForwardTrain (the collective's abort, after
// its timeout) instead of waiting for ever; a sharded model refuses to
// sample; and ShardExperts refuses an uneven split.
func TestExpertParallelPeerMissing(t *testing.T) {
	dir := filepath.Join("..", "testdata", "models", "qwen3-moe-tiny")
	m, err := Load(dir, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	g3, _ := inproc.NewGroup(3, time.Second)
	c3, _ := g3.Join(0, m.Backend)
	if err := m.ShardExperts(c3); err == nil {
		t.Fatal("8 experts sharded over 3 ranks")
	}
	g, _ := inproc.NewGroup(2, 100*time.Millisecond)
	coll, _ := g.Join(0, m.Backend)
	if err := m.ShardExperts(coll); err != nil {
		t.Fatal(err)
	}
	if first, n := m.LocalExperts(); first != 0 || n != 4 {
		t.Fatalf("rank 0 of 2 holds experts [%d, %d), want [0, 4)", first, first+n)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	b, targets := packedTrainBatch(rng, m.Config.VocabSize)
	if _, err := m.ForwardTrain(b, nil, targets); !errors.Is(err, kernels.ErrCollectiveAborted) {
		t.Fatalf("forward without its peer: %v, want the collective's abort", err)
	}
	cache := m.NewKVCache(2, 16)
	defer cache.Free()
	if _, err := m.Forward(cache, b, nil); err == nil {
		t.Fatal("a sharded model sampled")
	}
}
