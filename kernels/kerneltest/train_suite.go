package kerneltest

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// The training suite checks kernels.TrainOps the way the forward suite
// checks kernels.Ops: cases on guarded views against the float64
// references of train_ref.go. In addition, every backward op is checked
// against central finite differences of the backend's own forward op
// (cases named "fd,…", see train_fd.go), so a backward and a forward that
// disagree are caught even where both references could be wrong the same
// way. A backend that implements TrainOps runs it in one line:
//
//	func TestTrainConformance(t *testing.T) { kerneltest.RunTrain(t, cpu.New()) }

// Tolerances of the training ops against their float64 references. Most
// reuse tol.go's: tolExact (Fill, and Scale against the once-rounded
// product), tolElementwise (SwiGLUBackward, PolicyLoss, AdamW, RoPE's
// inverse), tolReduction (RMSNormBackward, LogSoftmaxGatherBackward) and
// tolMatMul (AttentionBackward). The CPU backend's worst cases (NMSE /
// max-abs relative to scale): AttentionBackward 1.6e-13 / 3.1e-7,
// RMSNormBackward 1.7e-15 / 4.6e-8, SwiGLUBackward 2.1e-15 / 4.6e-8,
// PolicyLoss 1.1e-15 / 3.7e-8, AdamW 1.8e-15 / 7.9e-8,
// SigmoidGateBackward 5.7e-16 / 3.0e-8, AttentionInputsBackward (gated,
// partial rotary) 9.4e-16 / 6.2e-8 (emu: 8.9e-15 / 8.2e-8); its
// finite-difference checks use at
// most 1.6% of their tolerance (relative error ≤ 1.7e-4 against fdRel
// 1e-2).
var (
	// SumSquares accumulates in float64 and rounds once, so it may differ
	// from the reference only by that rounding (plus a reordering of the
	// float64 sum, far below it): |err| ≤ 2⁻²³·|want|. A float32
	// accumulator over 10⁶ terms is off by ~1e-4 (train_test.go).
	tolSumSquares = Tol{NMSE: 1e-14, MaxAbs: 0x1p-23}
)

// TrainCases returns every case of the training suite, grouped by op, in a
// fixed order and with fixed seeds. Each case's Check fails with an error
// (it does not panic) if the backend does not implement kernels.TrainOps.
func TrainCases() []Case {
	var cs []Case
	for _, group := range [][]Case{
		fillCases(),
		scaleCases(),
		sumSquaresCases(),
		rmsNormBackwardCases(),
		rmsNormBackwardBF16Cases(),
		swiGLUBackwardCases(),
		activationBF16Cases("SwiGLUBackward"),
		sigmoidGateBackwardCases(),
		sigmoidGateBackwardBF16Cases(),
		ropeBackwardCases(),
		scatterRowsCases(),
		attentionBackwardCases(),
		attentionBackwardVariantCases(),
		logSoftmaxGatherBackwardCases(),
		policyLossCases(),
		adamWCases(),
		swiGLURowsBackwardCases(),
		swiGLURowsBackwardBF16Cases(),
		loRAExpandBackwardCases(),
		loRAShrinkBackwardCases(),
		attentionInputsBackwardCases(),
	} {
		cs = append(cs, group...)
	}
	return cs
}

// RunTrain runs every training case as a subtest t.Run(op, t.Run(name)).
func RunTrain(t *testing.T, b kernels.Backend) {
	t.Helper()
	runCases(t, b, TrainCases())
}

// CheckTrain runs every training case whose Op is in ops (all of them when
// ops is empty) and returns the failures joined, each prefixed "Op/Name: ",
// or nil. It is Check for the training suite, for tests that prove a
// broken backend is caught.
func CheckTrain(b kernels.Backend, ops ...string) error { return checkCases(b, TrainCases(), ops) }

// trainCase builds a Case whose check receives the training ops.
func trainCase(op, name string, check func(b kernels.Backend, tb kernels.TrainOps) error) Case {
	return Case{Op: op, Name: name, check: func(b kernels.Backend) error { return check(b, b) }}
}
