package loss

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// TestPolicyGradientReadsBackOncePerStep: under emu, the step's metrics
// come back in the same six downloads (log-prob, entropy, loss, clip,
// correction clip, mismatch KL)
// whether the step takes one micro-batch or three, so a micro-batch makes
// the host wait for nothing; the results are the same.
func TestPolicyGradientReadsBackOncePerStep(t *testing.T) {
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
	policy := base.WithAdapter(ad)
	var samples []Sample
	for i := range 3 {
		s := Sample{Advantage: float32(i) - 1}
		for j := range 12 {
			tok := int32((i*37 + j*11) % base.Config.VocabSize)
			if j < 5 {
				s.Prompt = append(s.Prompt, tok)
			} else {
				s.Completion, s.OldLogp = append(s.Completion, tok), append(s.OldLogp, -6)
			}
		}
		samples = append(samples, s)
	}
	var stats [2]Stats
	for k, micro := range []int{1 << 20, 11} { // one micro-batch, then one per sample
		before := be.Counts()
		st, err := PolicyGradient(policy, samples, DefaultConfig(), 7, micro)
		if err != nil {
			t.Fatal(err)
		}
		got := be.Counts().Sub(before)
		if got.DtoH != 6 || got.Syncs != 6 {
			t.Fatalf("micro-batch tokens %d: %v; want the 6 downloads of the step's metrics and their 6 waits, nothing per micro-batch", micro, got)
		}
		stats[k] = st
	}
	if d := stats[0].Loss - stats[1].Loss; d > 1e-6 || d < -1e-6 || stats[0].Tokens != stats[1].Tokens {
		t.Fatalf("one micro-batch: %+v; three: %+v", stats[0], stats[1])
	}
}
