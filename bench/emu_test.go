package bench

import (
	"fmt"
	"slices"
	"testing"

	_ "github.com/grpo-dev/grpo/kernels/emu" // registers the "emu" backend: the CUDA backend on the emulated device
	"github.com/grpo-dev/grpo/model"
)

// TestBenchQwenVocabLargeBatchOnEmu runs the bench's prefill and decode
// path — bf16 weights, logits at the last prompt token only, sampling on
// the device — through the CUDA backend under emu, on a tiny shape with
// Qwen3's 151,936-token vocabulary at batch 128 and 256: the shapes where
// logits at every prefill position (16384 × 151936 = 2.49e9 elements)
// passed the int32 index guard and panicked. A short prefill is cut into
// several chunks so a prompt spans two forwards. Greedy decoding: the
// emulator takes ~26 ms per 151,936-wide row at T = 1 (a block's 1024
// threads are fibers on one core); the index arithmetic is the same.
func TestBenchQwenVocabLargeBatchOnEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("samples 151,936-wide rows for 384 sequences under the emulator (about 8 s)")
	}
	m := randomModel(t, model.Config{ModelType: "qwen3", HiddenSize: 8, IntermediateSize: 16, NumLayers: 1,
		NumHeads: 1, NumKVHeads: 1, HeadDim: 8, VocabSize: 151936, RMSNormEps: 1e-6, RopeTheta: 1e6,
		MaxPositions: 64, TieWordEmbeddings: true, HiddenAct: "silu"}, "emu")
	for _, batch := range []int{128, 256} {
		res, err := Run(m, Options{Prefill: 3, Decode: 1, Batch: batch,
			Repeat: 1, PrefillChunk: 200, Temperature: 0, NoMatmul: true})
		if err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
		if w := WeightDType(m).String(); w != "BF16" && w != "bf16" {
			t.Errorf("batch %d: weights %q, want bf16 on a CUDA backend", batch, w)
		}
		t.Logf("batch %d: %+v", batch, res.Figures)
		var names []string
		for _, r := range res.Figures {
			names = append(names, r.Name)
			if !(r.Value > 0) {
				t.Errorf("batch %d: %s = %v", batch, r.Name, r.Value)
			}
		}
		for _, want := range []string{fmt.Sprintf("prefill %dx3", batch), fmt.Sprintf("decode batch %d", batch)} {
			if !slices.Contains(names, want) {
				t.Errorf("batch %d: no %q figure in %v", batch, want, names)
			}
		}
	}
}

// TestPrefillChunks: chunks hold at most the limit, a prompt may span
// chunks, and each prompt's last token is a logit row exactly once.
func TestPrefillChunks(t *testing.T) {
	prompts := [][]int32{{1, 2, 3}, {4, 5, 6, 7, 8}, {9}}
	chunks := prefillChunks(prompts, 4)
	total, lasts := 0, 0
	for i, c := range chunks {
		if c.batch.Len() > 4 {
			t.Errorf("chunk %d has %d tokens", i, c.batch.Len())
		}
		total += c.batch.Len()
		for _, r := range c.logitRows {
			s, p := c.batch.Slots[r], c.batch.Positions[r]
			if int(p) != len(prompts[s])-1 {
				t.Errorf("chunk %d: logit row %d is slot %d position %d, not its prompt's last token", i, r, s, p)
			}
			lasts++
		}
	}
	if total != 9 || lasts != 3 || len(chunks) != 3 {
		t.Errorf("%d chunks, %d tokens, %d logit rows; want 3, 9, 3", len(chunks), total, lasts)
	}
}
