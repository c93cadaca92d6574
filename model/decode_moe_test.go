package model_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

// TestStaticDecodeStepRecordsRouting runs a random Qwen3-MoE (three
// layers, the middle one dense: mlp_only_layers) through Decoder while
// recording routing, six sequences in a bucket of eight (two padding
// rows), beside Forward with Batch.RecordExperts and Sample with the
// host's draws from the same PCG streams on a second cache. The reference
// runs the padding rows too (greedy, at the padding slot's position 0, as
// the decoder does): the emulator's GEMM stand-in can round a row's last
// bit differently with the GEMM's row count (seen: row 4's log-prob, 6 rows
// against 8, dense models too), so only the same m is bit for bit. Every step
// gives the same tokens and log-probs, bit for bit, and the same record of
// the six sequences in Forward's layout; after warm-up a step is one graph launch, no kernel
// launched from the host, no allocation, free or upload, and the two
// downloads of a step that records nothing: the output buffer (the
// bucket's tokens, then each sparse layer's bucket × k experts) and the
// log-probs, with their bytes computed here from the shapes.
func TestStaticDecodeStepRecordsRouting(t *testing.T) {
	t.Run("qwen3_moe", func(t *testing.T) {
		staticDecodeStepRecordsRouting(t, `{"model_type":"qwen3_moe","hidden_size":64,"intermediate_size":96,
		"num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"vocab_size":256,
		"num_experts":8,"num_experts_per_tok":2,"moe_intermediate_size":32,"mlp_only_layers":[1],"norm_topk_prob":true}`)
	})
	// GLM-4.5: layer 0 dense, sigmoid group-limited routing, shared experts.
	t.Run("glm4_moe", func(t *testing.T) {
		staticDecodeStepRecordsRouting(t, `{"model_type":"glm4_moe","hidden_size":64,"intermediate_size":96,
		"num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"vocab_size":256,
		"n_routed_experts":8,"num_experts_per_tok":2,"moe_intermediate_size":32,"first_k_dense_replace":1,
		"n_group":4,"topk_group":2,"routed_scaling_factor":2.5,"attention_bias":true}`)
	})
	// gpt-oss: every layer sparse, router and expert biases, clamped
	// SwiGLU; a sliding layer and a full one, with sinks.
	t.Run("gpt_oss", func(t *testing.T) {
		staticDecodeStepRecordsRouting(t, `{"model_type":"gpt_oss","hidden_size":64,"intermediate_size":32,
		"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"vocab_size":256,
		"num_local_experts":8,"num_experts_per_tok":2,"sliding_window":4}`)
	})
}

func staticDecodeStepRecordsRouting(t *testing.T, config string) {
	be := emu.New()
	defer be.Close()
	cfg, err := model.ParseConfig([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	m := model.NewRandom(cfg, be, 11)
	defer m.Free()
	if m.Config.SparseLayers() != 2 {
		t.Fatalf("%d sparse layers, want 2", m.Config.SparseLayers())
	}
	const seqs, bucket, prompt, steps = 6, 8, 3, 4
	vocab, per := m.Config.VocabSize, m.Config.RoutingLen(1)
	rng := rand.New(rand.NewPCG(5, 6))
	caches := [2]*model.KVCache{m.NewKVCache(seqs+1, prompt+steps+1), m.NewKVCache(seqs+1, prompt+steps+1)}
	// The padding slot (seqs) is free in both caches: the decoder's
	// padding rows and the reference's write its position 0.
	defer caches[0].Free()
	defer caches[1].Free()
	var pre model.Batch
	for s := range seqs {
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
	rows := make([]model.DecodeRow, seqs)
	pcgs := make([]*rand.PCG, seqs)
	p := make([]kernels.SampleParams, bucket) // the padding rows' greedy after the sequences'
	for s := range bucket {
		p[s] = kernels.SampleParams{TopP: 1}
	}
	for s := range seqs {
		pcgs[s] = rand.NewPCG(uint64(200+s), 0x5851f42d4c957f2d)
		hi, lo := pcgState(t, pcgs[s])
		if s%3 != 1 {
			p[s] = kernels.SampleParams{Temperature: 1, TopP: 1}
		}
		rows[s] = model.DecodeRow{Slot: int32(s), Pos: prompt, Token: int32(rng.IntN(vocab)), Params: p[s], PCGHi: hi, PCGLo: lo}
	}
	d := m.NewDecoder(bucket)
	defer d.Free()
	if d.Bucket(seqs) != bucket {
		t.Fatalf("bucket of %d rows: %d, want %d", seqs, d.Bucket(seqs), bucket)
	}
	if err := d.Load(caches[0], rows, seqs); err != nil {
		t.Fatal(err)
	}
	tok, lp, rec := make([]int32, seqs), make([]float32, seqs), make([]int32, seqs*per)
	wantTok, wantLp, wantRec := make([]int32, bucket), make([]float32, bucket), make([]int32, bucket*per)
	if err := d.StepRecording(caches[0], tok, lp, rec[:per]); err == nil || !strings.Contains(err.Error(), "needs 24") {
		t.Fatalf("a record of %d entries for %d rows: %v, want an error naming the 24 needed", per, seqs, err)
	}
	next := make([]int32, seqs)
	for s := range seqs {
		next[s] = rows[s].Token
	}
	dtok, dlp := be.Alloc(kernels.I32, bucket), be.Alloc(kernels.F32, bucket)
	defer be.Free(dtok)
	defer be.Free(dlp)
	u := make([]float64, bucket)
	for step := range steps {
		b := model.Batch{RecordExperts: wantRec}
		for s := range seqs {
			b.Add(s, prompt+step, next[s])
		}
		for range bucket - seqs {
			b.Add(seqs, 0, rows[0].Token)
		}
		logits, err := m.Forward(caches[1], &b, nil)
		if err != nil {
			t.Fatal(err)
		}
		for s := range seqs {
			u[s] = 0
			if p[s].Temperature > 0 {
				u[s] = rand.New(pcgs[s]).Float64()
			}
		}
		be.Sample(dtok, dlp, logits, bucket, vocab, u, p)
		be.DownloadI32(wantTok, dtok)
		be.Download(wantLp, dlp)
		be.Free(logits)
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		before := be.Counts()
		if err := d.StepRecording(caches[0], tok, lp, rec); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		got := be.Counts().Sub(before)
		if !slices.Equal(tok, wantTok[:seqs]) || !slices.Equal(lp, wantLp[:seqs]) {
			t.Fatalf("step %d: tokens %v log-probs %v; Forward+Sample gives %v %v", step, tok, lp, wantTok[:seqs], wantLp[:seqs])
		}
		if !slices.Equal(rec, wantRec[:seqs*per]) {
			t.Fatalf("step %d: recorded routing\n%v\nForward records\n%v", step, rec, wantRec[:seqs*per])
		}
		copy(next, tok)
		if step < 2 {
			continue // the first step runs op by op, the second is captured
		}
		if err := d.GraphErr(); err != nil {
			t.Fatalf("step %d: the capture failed: %v", step, err)
		}
		// The output buffer comes back whole (padding rows included: their
		// tokens are checked for NaN); the log-probs of the sequences only.
		outBytes := 4 * (bucket + bucket*m.Config.SparseLayers()*m.Config.NumExpertsPerTok)
		want := cuda.Counts{GraphLaunches: 1, GraphKernels: got.GraphKernels, Syncs: 2, DtoH: 2, DtoHBytes: int64(outBytes + 4*seqs),
			WeightBytes: got.WeightBytes, Atomics: got.Atomics, FLOPs: got.FLOPs} // counted FLOPs: TestPrefillFLOPsOnEmu's business
		if got != want || got.GraphKernels < 10 {
			t.Fatalf("decode step %d after warm-up: %v\nwant: 1 graph launch, no host launch, no alloc, free or upload, 2 downloads of %d bytes",
				step, got, want.DtoHBytes)
		}
	}
	// A step that does not record brings back the tokens alone.
	before := be.Counts()
	if err := d.Step(caches[0], tok, lp); err != nil {
		t.Fatal(err)
	}
	if got := be.Counts().Sub(before); got.DtoH != 2 || got.DtoHBytes != 4*(bucket+seqs) || got.GraphLaunches != 1 {
		t.Fatalf("a step without record: %v, want 1 graph launch and 2 downloads of %d bytes", got, 4*(bucket+seqs))
	}
}

// TestStepRecordingDenseModel: a record asked of a model with no sparse
// layer is an error naming the model, not a silent empty record.
func TestStepRecordingDenseModel(t *testing.T) {
	be := emu.New()
	defer be.Close()
	m, err := model.Load("../testdata/models/qwen3-tiny", be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	cache := m.NewKVCache(2, 4)
	defer cache.Free()
	d := m.NewDecoder(1)
	defer d.Free()
	if err := d.Load(cache, []model.DecodeRow{{Params: kernels.SampleParams{TopP: 1}}}, -1); err != nil {
		t.Fatal(err)
	}
	err = d.StepRecording(cache, make([]int32, 1), make([]float32, 1), []int32{})
	if err == nil || !strings.Contains(err.Error(), "0 sparse layers") {
		t.Fatalf("recording on a dense model: %v", err)
	}
}
