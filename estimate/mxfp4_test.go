package estimate

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model"
)

// TestEstimateGptOss120bMXFP4 prices gpt-oss-120b as grpo loads it: on
// cuda its experts stay MXFP4 (36 layers × 128 experts × 3 × 2880², 4.25
// bits each: 60.9 GB) beside the other 2.17B parameters in bf16, and a
// run of 16 prompts × 8 rollouts of 2048 tokens with the default adapter
// fits one H200 (peak 119.8 GiB); dequantized to bf16 (the CPU's way) the
// weights alone (217.6 GiB) would not.
func TestEstimateGptOss120bMXFP4(t *testing.T) {
	cfg := estimateConfig(128, 8, 2048)
	cfg.Model = "openai/gpt-oss-120b"
	cfg.MicroBatchTokens = 4096
	mc, _ := model.Shape("gpt-oss-120b")
	const experts = int64(36 * 128 * 3 * 2880 * 2880)
	if got := mc.MXFP4ExpertParams(); got != experts {
		t.Fatalf("MXFP4 expert params %d, want %d", got, experts)
	}
	e, err := Memory(cfg, mc, Options{Device: "cuda"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := item(t, e, PhaseResident, "MXFP4 experts"), experts/2+experts/32; got != want {
		t.Errorf("MXFP4 experts %d B, want %d", got, want)
	}
	if got, want := item(t, e, PhaseResident, "base weights"), (e.BaseParams-experts)*2; got != want {
		t.Errorf("other weights %d B, want %d (bf16)", got, want)
	}
	if e.Peak > h200 {
		t.Errorf("peak %s in %s exceeds the H200's 139 GiB", FormatBytes(e.Peak), e.PeakPhase)
	}
	t.Logf("resident %s (MXFP4 experts %s), peak %s in %s", FormatBytes(e.PhaseBytes(PhaseResident)),
		FormatBytes(item(t, e, PhaseResident, "MXFP4 experts")), FormatBytes(e.Peak), e.PeakPhase)

	// Over 4 devices each holds 32 of each layer's 128 experts: their
	// MXFP4 weights at 4.25 bits (≈ 0.53 B a param), their biases bf16.
	ep, err := Memory(cfg, mc, Options{Device: "cuda", ExpertParallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	held, heldMX := routedExpertParams(mc)/4, experts/4
	if got, want := item(t, ep, PhaseResident, "routed experts"), heldMX/2+heldMX/32+(held-heldMX)*2; got != want {
		t.Errorf("EP 4: routed experts %d B, want %d", got, want)
	}
	for _, it := range ep.Items {
		if it.Name == "routed experts" && (!strings.Contains(it.Detail, "MXFP4 × 4.25 bits") || strings.Contains(it.Detail, "params × 2 B")) {
			t.Errorf("EP 4: routed experts detail %q does not price MXFP4 at 4.25 bits", it.Detail)
		}
	}

	// The CPU dequantizes at load and widens bf16 to f32: no MXFP4 item.
	e, err = Memory(cfg, mc, Options{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range e.Items {
		if it.Name == "MXFP4 experts" {
			t.Errorf("the CPU estimate prices MXFP4 experts: %+v", it)
		}
	}
	if got, want := item(t, e, PhaseResident, "base weights"), e.BaseParams*4; got != want {
		t.Errorf("cpu weights %d B, want %d (f32)", got, want)
	}
}
