package lora_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// The model with an adapter attached, on the emulated device: these tests
// live here, not in model or kernels/emu, because tests follow the
// dependency arrows and only lora and what is above it may import lora.

// TestStaticDecodeStep runs the qwen3 tiny model with a rank-16 LoRA on
// all seven projections at batch 128 under emu through Decoder (the LoRA
// weights changed in place before the last step, as by an optimiser
// step, which the graph must see), beside
// the sampler's path (Forward, then Sample with the host's draws from the
// same PCG streams) on a second cache of the same backend. Every step
// gives the same tokens and log-probs, bit for bit (the emulator's GEMM
// sums each row in k order whatever the batch), and after warm-up a step
// is exactly one graph launch, no kernel launched from the host, no
// allocation, no free, no upload, and two waits: the downloads of the
// 128 tokens and log-probs (8 bytes per row).
func TestStaticDecodeStep(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 128 sequences under the emulator, twice (about 10 s of CPU)")
	}
	be := emu.New()
	defer be.Close()
	base, err := model.Load("../testdata/models/qwen3-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	ad, err := lora.New(base, lora.DefaultConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	// setB writes new values into every LoRA B in place, as an optimiser
	// step does (PEFT's B starts at zero: this makes the LoRA path count).
	setB := func() {
		for l := range base.Config.NumLayers {
			for p := range model.NumProj {
				lr := ad.LoRA(l, p)
				if lr == nil {
					continue // not a projection of this model
				}
				v := make([]float32, lr.B.Len())
				for i := range v {
					v[i] = float32(rng.NormFloat64() * 0.05)
				}
				be.Upload(lr.B, v)
			}
		}
	}
	setB()
	m := base.WithAdapter(ad)
	const batch, prompt, steps = 128, 2, 4
	vocab := m.Config.VocabSize
	caches := [2]*model.KVCache{m.NewKVCache(batch+1, prompt+steps+1), m.NewKVCache(batch+1, prompt+steps+1)}
	var pre model.Batch
	for s := range batch {
		for i := range prompt {
			pre.Add(s, i, int32(rng.IntN(vocab)))
		}
	}
	for _, c := range caches {
		logits, err := m.Forward(c, &pre, []int32{0})
		if err != nil {
			t.Fatal(err)
		}
		be.Free(logits)
	}
	// Mostly untruncated rows: the emulator's truncated sampling (bitwise
	// threshold searches, 1024 fibers a row) is what costs time here.
	paramSets := []kernels.SampleParams{{TopP: 1}, {Temperature: 1, TopP: 1}, {TopP: 1}, {Temperature: 1.3, TopP: 1}}
	truncated := []kernels.SampleParams{{Temperature: 0.7, TopP: 0.9, TopK: 20}, {Temperature: 1, TopP: 1, MinP: 0.05}}
	rows := make([]model.DecodeRow, batch)
	pcgs := make([]*rand.PCG, batch)
	p := make([]kernels.SampleParams, batch)
	for s := range batch {
		pcgs[s] = rand.NewPCG(uint64(100+s), 0x5851f42d4c957f2d)
		hi, lo := pcgState(t, pcgs[s])
		p[s] = paramSets[s%len(paramSets)]
		if s%32 == 5 {
			p[s] = truncated[s/32%2]
		}
		rows[s] = model.DecodeRow{Slot: int32(s), Pos: prompt, Token: int32(rng.IntN(vocab)), Params: p[s], PCGHi: hi, PCGLo: lo}
	}
	d := m.NewDecoder(batch)
	defer d.Free()
	if err := d.Load(caches[0], rows, batch); err != nil {
		t.Fatal(err)
	}
	tok, lp := make([]int32, batch), make([]float32, batch)
	wantTok, wantLp := make([]int32, batch), make([]float32, batch)
	next := make([]int32, batch)
	for s := range batch {
		next[s] = rows[s].Token
	}
	dtok, dlp := be.Alloc(kernels.I32, batch), be.Alloc(kernels.F32, batch)
	u := make([]float64, batch)
	for step := range steps {
		if step == steps-1 {
			// An optimiser step between decode steps: the captured graph
			// reads the adapter through the same buffers, so it survives.
			setB()
			if err := be.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		var b model.Batch
		for s := range batch {
			b.Add(s, prompt+step, next[s])
		}
		logits, err := m.Forward(caches[1], &b, nil)
		if err != nil {
			t.Fatal(err)
		}
		for s := range batch {
			u[s] = 0
			if p[s].Temperature > 0 {
				u[s] = rand.New(pcgs[s]).Float64()
			}
		}
		be.Sample(dtok, dlp, logits, batch, vocab, u, p)
		be.DownloadI32(wantTok, dtok)
		be.Download(wantLp, dlp)
		be.Free(logits)
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		before := be.Counts()
		if err := d.Step(caches[0], tok, lp); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		got := be.Counts().Sub(before)
		for s := range batch {
			if tok[s] != wantTok[s] || lp[s] != wantLp[s] {
				t.Fatalf("step %d, sequence %d: token %d (log-prob %v), Forward+Sample gives %d (%v)", step, s, tok[s], lp[s], wantTok[s], wantLp[s])
			}
		}
		copy(next, tok)
		if step < 2 {
			continue // the first step runs op by op, the second is captured
		}
		if err := d.GraphErr(); err != nil {
			t.Fatalf("step %d: the capture failed: %v", step, err)
		}
		want := cuda.Counts{GraphLaunches: 1, GraphKernels: got.GraphKernels, Syncs: 2, DtoH: 2, DtoHBytes: 8 * batch, WeightBytes: got.WeightBytes, Atomics: got.Atomics, FLOPs: got.FLOPs}
		if got != want || got.GraphKernels < 10 {
			t.Fatalf("decode step %d after warm-up: %v\nwant: 1 graph launch, no host launch, no alloc, free or upload, 2 syncs (the 8 bytes per row coming back)", step, got)
		}
	}
}

func pcgState(t *testing.T, p *rand.PCG) (hi, lo uint64) {
	b, err := p.MarshalBinary()
	if err != nil || len(b) != 20 {
		t.Fatalf("PCG.MarshalBinary: %d bytes, %v", len(b), err)
	}
	return binary.BigEndian.Uint64(b[4:]), binary.BigEndian.Uint64(b[12:])
}
