package kerneltest

import (
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// Plain-loop float64 references of kernels.TrainOps, in the spirit of
// ref.go: the specification each backend is checked against, written from
// the op's doc comment and sharing no code with any backend. Each backward
// reference is itself checked against finite differences of its forward
// reference in train_test.go, so a wrong formula here cannot hide.

// RefSumSquares returns Σ x[i]², summed in float64.
func RefSumSquares(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return s
}

// RefRMSNormBackward returns the input gradient of RMSNorm with frozen w,
// using the forward's per-row rstd r as given:
// dx[i] = r·w[i]·dy[i] − x[i]·r³/dim·Σ_j w[j]·dy[j]·x[j].
func RefRMSNormBackward(dy, x, w, rstd []float64, rows, dim int) []float64 {
	dx := make([]float64, rows*dim)
	for row := 0; row < rows; row++ {
		r := rstd[row]
		xs, dys := x[row*dim:(row+1)*dim], dy[row*dim:(row+1)*dim]
		dot := 0.0
		for j := range xs {
			dot += w[j] * dys[j] * xs[j]
		}
		for i := range xs {
			dx[row*dim+i] = r*w[i]*dys[i] - xs[i]*r*r*r/float64(dim)*dot
		}
	}
	return dx
}

// sigmoid is 1/(1+e^−g); for g = −1000, e^1000 is +Inf and σ is 0, which
// is the limit, so no special case is needed in float64.
func sigmoid(g float64) float64 { return 1 / (1 + math.Exp(-g)) }

// RefSwiGLUBackward returns dgate = dy·up·silu'(gate) and dup =
// dy·silu(gate), with silu'(g) = σ(g)·(1 + g·(1 − σ(g))).
func RefSwiGLUBackward(dy, gate, up []float64) (dgate, dup []float64) {
	dgate = make([]float64, len(dy))
	dup = make([]float64, len(dy))
	for i, g := range gate {
		s := sigmoid(g)
		dgate[i] = dy[i] * up[i] * s * (1 + g*(1-s))
		dup[i] = dy[i] * g * s
	}
	return dgate, dup
}

// RefSigmoidGateBackward returns dx = dy·σ(gate) and dgate =
// dy·x·σ(gate)·(1 − σ(gate)), with 1 − σ(g) taken as σ(−g) so it keeps
// its precision where σ(g) rounds to 1.
func RefSigmoidGateBackward(dy, x, gate []float64) (dx, dgate []float64) {
	dx, dgate = make([]float64, len(dy)), make([]float64, len(dy))
	for i, g := range gate {
		dx[i] = dy[i] * sigmoid(g)
		dgate[i] = dy[i] * x[i] * sigmoid(g) * sigmoid(-g)
	}
	return dx, dgate
}

// RefAttentionBackward returns the gradients of Σ dout ⊙ Attention(q, k, v)
// with respect to q (nTok × nHead × headDim) and the caches (pg.Rows() ×
// nKV × headDim; zero where no token reads; a row shared by several
// sequences gets the sum). It recomputes the softmax
// from q and k in float64 rather than taking the forward's out and lse, so
// it is independent of any backend's forward. With P the softmax of the
// scores s_j = scale·q·k_j over j ≤ pos[t]:
//
//	dP_j = dout·v_j,  D = Σ_j P_j·dP_j,  dS_j = P_j·(dP_j − D)
//	dq  = scale·Σ_j dS_j·k_j,  dk_j += scale·dS_j·q,  dv_j += P_j·dout.
func RefAttentionBackward(dout, q, k, v []float64, seq, pos []int32, pg Pages, nTok, nHead, nKV, headDim int, scale float64) (dq, dk, dv []float64) {
	return RefAttentionBackwardVariant(dout, q, k, v, seq, pos, pg, nTok, nHead, nKV, headDim, scale, RefVariant{})
}

// RefAttentionBackwardVariant is RefAttentionBackward under a variant
// (see RefAttentionVariant): the sums run over each token's window, and
// the sink joins P's denominator. The sink has no value, so its column of
// dP is 0 and D = Σ_j P_j·dP_j over the keys alone; no sink gradient is
// formed (the sinks are frozen).
func RefAttentionBackwardVariant(dout, q, k, v []float64, seq, pos []int32, pg Pages, nTok, nHead, nKV, headDim int, scale float64, rv RefVariant) (dq, dk, dv []float64) {
	dq = make([]float64, len(q))
	dk = make([]float64, len(k))
	dv = make([]float64, len(v))
	group := nHead / nKV
	for t := 0; t < nTok; t++ {
		for h := 0; h < nHead; h++ {
			g := h / group
			at := func(j int) int { return (pg.Row(int(seq[t]), j)*nKV + g) * headDim }
			qv := q[(t*nHead+h)*headDim:][:headDim]
			do := dout[(t*nHead+h)*headDim:][:headDim]
			lo, n := rv.first(int(pos[t])), int(pos[t])+1
			s := make([]float64, n)
			mx := math.Inf(-1)
			for j := lo; j < n; j++ {
				for d := 0; d < headDim; d++ {
					s[j] += qv[d] * k[at(j)+d]
				}
				s[j] *= scale
				mx = math.Max(mx, s[j])
			}
			if rv.Sinks != nil {
				mx = math.Max(mx, rv.Sinks[h])
			}
			z := 0.0
			for j := lo; j < n; j++ {
				z += math.Exp(s[j] - mx)
			}
			if rv.Sinks != nil {
				z += math.Exp(rv.Sinks[h] - mx)
			}
			p := make([]float64, n)
			dp := make([]float64, n)
			bigD := 0.0
			for j := lo; j < n; j++ {
				p[j] = math.Exp(s[j]-mx) / z
				for d := 0; d < headDim; d++ {
					dp[j] += do[d] * v[at(j)+d]
				}
				bigD += p[j] * dp[j]
			}
			dqv := dq[(t*nHead+h)*headDim:][:headDim]
			for j := lo; j < n; j++ {
				ds := p[j] * (dp[j] - bigD)
				for d := 0; d < headDim; d++ {
					dqv[d] += scale * ds * k[at(j)+d]
					dk[at(j)+d] += scale * ds * qv[d]
					dv[at(j)+d] += p[j] * do[d]
				}
			}
		}
	}
	return dq, dk, dv
}

// RefLogSoftmaxGatherBackward returns dlogits[r] = dlogp[r]·(onehot(target[r])
// − softmax(logits[r])) per row.
func RefLogSoftmaxGatherBackward(dlogp, logits []float64, target []int32, rows, vocab int) []float64 {
	dl := make([]float64, rows*vocab)
	for r := 0; r < rows; r++ {
		row := logits[r*vocab : (r+1)*vocab]
		mx := math.Inf(-1)
		for _, x := range row {
			mx = math.Max(mx, x)
		}
		z := 0.0
		for _, x := range row {
			z += math.Exp(x - mx)
		}
		for i, x := range row {
			oneHot := 0.0
			if i == int(target[r]) {
				oneHot = 1
			}
			dl[r*vocab+i] = dlogp[r] * (oneHot - math.Exp(x-mx)/z)
		}
	}
	return dl
}

// RefAdamW takes one torch.optim.AdamW step in place on param, m and v:
// decay first (p −= lr·wd·p), then the bias-corrected Adam update.
func RefAdamW(param, grad, m, v []float64, p kernels.AdamWParams) {
	lr, b1, b2 := float64(p.LR), float64(p.Beta1), float64(p.Beta2)
	eps, wd := float64(p.Eps), float64(p.WeightDecay)
	c1 := 1 - math.Pow(b1, float64(p.Step))
	c2 := 1 - math.Pow(b2, float64(p.Step))
	for i, g := range grad {
		param[i] -= lr * wd * param[i]
		m[i] = b1*m[i] + (1-b1)*g
		v[i] = b2*v[i] + (1-b2)*g*g
		param[i] -= lr * (m[i] / c1) / (math.Sqrt(v[i]/c2) + eps)
	}
}

// RefScatterRows returns out with row idx[i] replaced by row i of src, for
// i < n (distinct indices).
func RefScatterRows(out, src []float64, idx []int32, n, cols int) []float64 {
	res := append([]float64(nil), out...)
	for i := 0; i < n; i++ {
		copy(res[int(idx[i])*cols:(int(idx[i])+1)*cols], src[i*cols:(i+1)*cols])
	}
	return res
}
