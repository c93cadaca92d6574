// Package kerneltest owns the conformance suite of kernels.Backend: one
// list of op cases (shapes, flags and seeded random inputs, in the style of
// ggml's test-backend-ops) checked against plain-loop float64 references
// that are the specification of each op. Every backend runs it in one line,
// as gonum's blas/testblas is run by each BLAS:
//
//	func TestConformance(t *testing.T) { kerneltest.Run(t, cpu.New()) }
//
// Each case runs its op on views of guarded buffers (see guard) and checks
// that the output is finite and within the op's stated tolerance of the
// reference, that inputs are unchanged and that nothing outside the views
// was touched. Cases are plain functions returning an error, so a test can
// also prove that a broken backend is caught (see Check).
package kerneltest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// Case is one conformance check of one op.
type Case struct {
	// Op is the kernels.Backend method under test ("Buffers" for the
	// Alloc/Upload/Download/Slice/Copy contract).
	Op string
	// Name describes the shapes and flags, e.g. "m=17,n=13,k=33,tA,bf16".
	Name string
	// check runs the op on b and compares it with the reference.
	check func(b kernels.Backend) error
}

// Check runs the case on b and returns what is wrong, or nil. A panic in
// the backend (for example an out-of-range index read) becomes an error.
func (c Case) Check(b kernels.Backend) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return c.check(b)
}

// Cases returns every case of the suite, grouped by op, in a fixed order.
// Inputs are generated from fixed seeds, so a failure reproduces exactly.
func Cases() []Case {
	var cs []Case
	for _, group := range [][]Case{
		bufferCases(),
		describeCases(),
		matMulCases(),
		matMulBF16ACases(),
		matMulBF16CCases(),
		gatherRowsCases(),
		gatherRowsBF16Cases(),
		copyColumnsCases(),
		copyColumnsBF16Cases(),
		rmsNormCases(),
		ropeCases(),
		addBiasCases(),
		addBiasBF16Cases(),
		addCases(),
		addBF16Cases(),
		swiGLUCases(),
		activationBF16Cases("SwiGLU"),
		sigmoidGateCases(),
		sigmoidGateBF16Cases(),
		kvWriteCases(),
		attentionCases(),
		attentionBF16RefusalCases(),
		attentionVariantCases(),
		sharedPrefixCases(),
		sharedPrefixVariantCases(),
		logSoftmaxGatherCases(),
		addI32Cases(),
		sampleStreamCases(),
		addRMSNormCases(),
		addRMSNormBF16Cases(),
		swiGLURowsCases(),
		swiGLURowsBF16Cases(),
		loRAShrinkCases(),
		loRAExpandCases(),
		attentionInputsCases(),
		moeCases(),
		linearCases(),
		ssdScanCases(),
		ssdScanBF16Cases(),
		ssdScanBackwardCases(),
		ssdScanBackwardBF16Cases(),
		groupedGatedRMSNormCases(),
		groupedGatedRMSNormBF16Cases(),
		groupedGatedRMSNormBackwardBF16Cases(),
		reLU2Cases(),
	} {
		cs = append(cs, group...)
	}
	return cs
}

// Run runs every case as a subtest t.Run(op, t.Run(name)).
func Run(t *testing.T, b kernels.Backend) {
	t.Helper()
	runCases(t, b, Cases())
}

// runCases runs cases, grouped by op, as subtests.
func runCases(t *testing.T, b kernels.Backend, cs []Case) {
	t.Helper()
	for start := 0; start < len(cs); {
		end := start
		for end < len(cs) && cs[end].Op == cs[start].Op {
			end++
		}
		group := cs[start:end]
		t.Run(group[0].Op, func(t *testing.T) {
			for _, c := range group {
				t.Run(c.Name, func(t *testing.T) {
					if err := c.Check(b); err != nil {
						t.Error(err)
					}
				})
			}
		})
		start = end
	}
}

// Check runs every case whose Op is in ops (all cases when ops is empty)
// and returns the failures joined, each prefixed "Op/Name: ", or nil.
func Check(b kernels.Backend, ops ...string) error { return checkCases(b, Cases(), ops) }

func checkCases(b kernels.Backend, cs []Case, ops []string) error {
	want := map[string]bool{}
	for _, op := range ops {
		want[op] = true
	}
	var errs []error
	for _, c := range cs {
		if len(ops) > 0 && !want[c.Op] {
			continue
		}
		if err := c.Check(b); err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", c.Op, c.Name, err))
		}
	}
	return errors.Join(errs...)
}
