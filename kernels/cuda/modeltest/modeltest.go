// Package modeltest owns the full-model conformance check of a CUDA backend
// (kernels/emu on every `go test`, the real device under -tags cuda): the
// tiny models of testdata/models loaded on the backend under test and on the
// CPU backend give the same logits (prefill, and decode through the KV
// cache), and with a LoRA adapter whose B is non-zero the same GRPO loss and
// LoRA gradients (trainer.PolicyGradient); both are also held against the
// PyTorch goldens of testdata/golden directly. kerneltest checks each op on
// random inputs; this checks that the ops compose into the model the CPU
// backend computes, with the weights, dtypes and shapes the model really
// uses (bf16 weights, GQA, q/k norms, biases, tied heads, shards).
//
// It is a test helper: only tests import it (it reaches up to trainer, which
// no kernels package may do).
package modeltest

import (
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// Models are the tiny checkpoints in testdata/models: the three
// architectures, f32 and bf16, tied and untied heads, one sharded.
var Models = []string{"qwen3-tiny", "qwen3-tiny-bf16", "qwen2-tiny", "llama-tiny", "llama-tiny-bf16-sharded"}

// Options bound the work, so that the emulator stays fast.
type Options struct {
	// MaxPrefill skips golden logit cases longer than this many tokens
	// (the goldens have 1, 7, 64 and 256).
	MaxPrefill int
	// MaxDecode skips the token-by-token decode of cases longer than this.
	MaxDecode int
}

// The bounds. Both backends widen bf16 weights exactly and compute in f32,
// so backend-to-backend differences are f32 summation order (cuBLAS or the
// emulator's Sgemm loop against gonum, the kernels' reductions against the
// CPU loops, atomicAdd order in AttentionBackward's dk/dv): measured NMSE
// ~1e-14 and max-abs ~1e-6 of scale under emu (CUDA.md lists the figures).
// The bounds leave two to three orders of magnitude for the GPU's expf
// (2 ulp) and cuBLAS's blocking, and are still far below a bf16 rounding
// of the same values (NMSE ~1e-6, max-abs ~4e-3), so any lost precision —
// a weight or activation rounded to bf16, a dropped term — fails them.
var (
	// TolLogits bounds logits against the CPU backend's.
	TolLogits = kerneltest.Tol{NMSE: 1e-10, MaxAbs: 2e-5}
	// TolGrad bounds each LoRA gradient tensor against the CPU backend's.
	TolGrad = kerneltest.Tol{NMSE: 1e-9, MaxAbs: 1e-4}
	// TolLoss bounds |Δ|/|loss| (and |Δ| of mean entropy and KL) against
	// the CPU backend's.
	TolLoss = 1e-5
)

// The PyTorch bars, the same as the CPU backend's own golden tests
// (model.TestLogitsMatchPyTorch, trainer.TestPolicyGradientMatchesPyTorch).
const (
	goldenLogitsMaxAbs = 5e-5
	goldenLossRel      = 1e-5
	goldenGradNMSE     = 1e-6
)

// Run runs every check on be. testdata is the repository's testdata
// directory (from a package two levels down: "../../testdata").
func Run(t *testing.T, be kernels.Backend, testdata string, o Options) {
	t.Run("logits", func(t *testing.T) {
		for _, name := range Models {
			t.Run(name, func(t *testing.T) {
				checkLogits(t, be, testdata, filepath.Join(testdata, "models", name), name, true, o)
			})
		}
		t.Run(bf16Qwen2, func(t *testing.T) {
			checkLogits(t, be, testdata, qwen2BF16(t, testdata), "qwen2-tiny", false, o)
		})
	})
	t.Run("golden-loss", func(t *testing.T) { checkGoldenLoss(t, be, testdata) })
	t.Run("grads", func(t *testing.T) {
		for _, name := range Models {
			t.Run(name, func(t *testing.T) { checkGrads(t, be, filepath.Join(testdata, "models", name)) })
		}
		t.Run(bf16Qwen2, func(t *testing.T) { checkGrads(t, be, qwen2BF16(t, testdata)) })
	})
}

// bf16Qwen2 is qwen2-tiny with every tensor rounded to bf16, biases
// included (writeBF16Copy), checked against the CPU backend only.
const bf16Qwen2 = "qwen2-tiny-as-bf16"

func qwen2BF16(t *testing.T, testdata string) string {
	dir := t.TempDir()
	if err := writeBF16Copy(dir, filepath.Join(testdata, "models", "qwen2-tiny")); err != nil {
		t.Fatal(err)
	}
	return dir
}
