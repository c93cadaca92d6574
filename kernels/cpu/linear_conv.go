package cpu

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// The causal convolution of a DeltaNet layer, one channel per loop: a
// channel's taps, state rows and tokens are all its own, so channels run
// in parallel without sharing anything, init slots shared by several runs
// included.

func convShape(op string, channels, kernel int) int {
	positive(op, channels, kernel)
	if kernel < 2 {
		panic(fmt.Sprintf("cpu.%s: kernel %d: want at least 2", op, kernel))
	}
	return (kernel - 1) * channels
}

// convWindow fills u (count + kernel − 1 values) with the run's inputs of
// channel c: the init state's rows, then its tokens.
func convWindow(u, x, st []float32, r run, channels, kernel, c int) {
	for m := range kernel - 1 {
		u[m] = 0
		if init := stateOf(st, r.init, (kernel-1)*channels); init != nil {
			u[m] = init[m*channels+c]
		}
	}
	for i := range r.count {
		u[kernel-1+i] = x[(r.first+i)*channels+c]
	}
}

// convBias returns the bias operand, or zeros for none: adding a zero
// leaves every sum as it was without one.
func convBias(op string, bias, w kernels.Buffer, channels int) []float32 {
	if bias == nil {
		return make([]float32, channels)
	}
	if bias.DType() != w.DType() {
		panic(fmt.Sprintf("cpu.%s: bias is %v, w %v: want one dtype", op, bias.DType(), w.DType()))
	}
	return floats(op, "bias", bias, channels)
}

func (be *Backend) CausalConv1D(out, x, w, bias, convState, runs kernels.Buffer, nRuns, nTok, channels, kernel int) {
	const op = "CausalConv1D"
	per := convShape(op, channels, kernel)
	rs, slots := linearRuns(op, runs, nRuns, nTok, convState, per)
	o, obf := floatsOut(op, "out", out, nTok*channels)
	xs := floats(op, "x", x, nTok*channels)
	ws := floats(op, "w", w, channels*kernel)
	bs := convBias(op, bias, w, channels)
	var st []float32
	if slots > 0 {
		st = f32(op, "convState", convState, slots*per)
	}
	n := maxCount(rs)
	be.parallel(channels, nTok*kernel, func(lo, hi int) {
		u := make([]float32, n+kernel-1)
		for c := lo; c < hi; c++ {
			wc := ws[c*kernel : (c+1)*kernel]
			for _, r := range rs {
				convWindow(u, xs, st, r, channels, kernel, c)
				for i := range r.count {
					p := bs[c]
					for j, wj := range wc {
						p += wj * u[i+j]
					}
					o[(r.first+i)*channels+c] = roundIf(obf, silu(p))
				}
				// Written after the run read its init state: the same slot
				// may be both.
				if fin := stateOf(st, r.final, per); fin != nil {
					for m := range kernel - 1 {
						fin[m*channels+c] = u[r.count+m]
					}
				}
			}
		}
	})
}

func (be *Backend) CausalConv1DBackward(dx, dConvState, dout, x, w, bias, convState, runs kernels.Buffer, nRuns, nTok, channels, kernel int) {
	const op = "CausalConv1DBackward"
	per := convShape(op, channels, kernel)
	rs, slots := linearRuns(op, runs, nRuns, nTok, convState, per)
	d, dbf := floatsOut(op, "dx", dx, nTok*channels)
	do := floats(op, "dout", dout, nTok*channels)
	xs := floats(op, "x", x, nTok*channels)
	ws := floats(op, "w", w, channels*kernel)
	bs := convBias(op, bias, w, channels)
	var st, dst []float32
	if slots > 0 {
		st = floats(op, "convState", convState, slots*per)
		dst = f32(op, "dConvState", dConvState, slots*per)
	}
	n := maxCount(rs)
	be.parallel(channels, 2*nTok*kernel, func(lo, hi int) {
		u := make([]float32, n+kernel-1)
		du := make([]float32, n+kernel-1)
		for c := lo; c < hi; c++ {
			wc := ws[c*kernel : (c+1)*kernel]
			for _, r := range rs {
				convWindow(u, xs, st, r, channels, kernel, c)
				clear(du[:r.count+kernel-1])
				// The final state's rows are u's last kernel−1 values.
				if fin := stateOf(dst, r.final, per); fin != nil {
					for m := range kernel - 1 {
						du[r.count+m] += fin[m*channels+c]
					}
				}
				for i := range r.count {
					p := bs[c]
					for j, wj := range wc {
						p += wj * u[i+j]
					}
					dp := do[(r.first+i)*channels+c] * siluGrad(p)
					for j, wj := range wc {
						du[i+j] += wj * dp
					}
				}
				for i := range r.count {
					d[(r.first+i)*channels+c] = roundIf(dbf, du[kernel-1+i])
				}
				if init := stateOf(dst, r.init, per); init != nil {
					for m := range kernel - 1 {
						init[m*channels+c] += du[m]
					}
				}
			}
		}
	})
}
