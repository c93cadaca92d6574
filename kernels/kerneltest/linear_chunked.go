package kerneltest

import "math"

// The chunked form of the gated delta rule, in float32, as
// kernels/cuda/gated_delta_chunked.cu computes it (and as transformers'
// torch_chunk_gated_delta_rule describes it). It is not a reference — the
// recurrence in linear_ref.go is — but the algorithm the CUDA prefill and
// training kernel implements, checked here against the recurrence
// (linear_chunked_test.go), so a failure of the kernel can be told apart
// from a failure of the method.
//
// Within a chunk of L ≤ DeltaChunk tokens starting from state S₀, with
// G_t = g_0 + … + g_t (so the decay from token s to token t ≥ s is
// exp(G_t − G_s) ≤ 1) the recurrence unrolls to
//
//	S_t = exp(G_t)·S₀ + Σ_{s≤t} exp(G_t − G_s)·k̂_s δ_sᵀ
//	δ_t = β_t(v_t − exp(G_t)·S₀ᵀk̂_t − Σ_{s<t} exp(G_t − G_s)(k̂_t·k̂_s)·δ_s)
//
// so (I + A)·δ = β⊙v − β⊙exp(G)⊙K̂·S₀ with A strictly lower triangular,
// A[t,s] = β_t·exp(G_t − G_s)·k̂_t·k̂_s. Solving it by forward substitution
// once for U = (I+A)⁻¹(β⊙v) and W = (I+A)⁻¹(β⊙exp(G)⊙K̂) (the UT/WY
// transform) leaves δ = U − W·S₀, a matrix product; the outputs and the
// next chunk's state are then products too:
//
//	out_t = exp(G_t)·q̂_tᵀS₀ + Σ_{s≤t} exp(G_t − G_s)(q̂_t·k̂_s)·δ_s
//	S_L   = exp(G_L)·S₀ + Σ_s exp(G_L − G_s)·k̂_s δ_sᵀ
//
// Only differences G_t − G_s with t ≥ s and G_t itself are exponentiated,
// never −G, so nothing overflows however strong the decay.

// DeltaChunk is the chunk length of the chunked form.
const DeltaChunk = 64

// ChunkedGatedDelta runs one head over n tokens: q and k are the
// normalised q̂ and k̂ (n × dimK), v is n × dimV, g and beta have n
// entries, S (dimK × dimV) is the initial state and receives the final
// one. It returns out (n × dimV). All arithmetic is float32.
func ChunkedGatedDelta(q, k, v, g, beta, S []float32, n, dimK, dimV int) []float32 {
	out := make([]float32, n*dimV)
	for c0 := 0; c0 < n; c0 += DeltaChunk {
		L := min(DeltaChunk, n-c0)
		chunkedStep(q[c0*dimK:], k[c0*dimK:], v[c0*dimV:], g[c0:], beta[c0:], S, out[c0*dimV:], L, dimK, dimV)
	}
	return out
}

func exp32(x float32) float32 { return float32(math.Exp(float64(x))) }

func dot32(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func chunkedStep(q, k, v, g, beta, S, out []float32, L, dimK, dimV int) {
	G := make([]float32, L)
	var acc float32
	for t := range L {
		acc += g[t]
		G[t] = acc
	}
	kt := func(t int) []float32 { return k[t*dimK : (t+1)*dimK] }
	// U and W by forward substitution through (I + A).
	U := make([]float32, L*dimV)
	W := make([]float32, L*dimK)
	for t := range L {
		for j := range dimV {
			U[t*dimV+j] = beta[t] * v[t*dimV+j]
		}
		for i := range dimK {
			W[t*dimK+i] = beta[t] * exp32(G[t]) * k[t*dimK+i]
		}
		for s := range t {
			a := beta[t] * exp32(G[t]-G[s]) * dot32(kt(t), kt(s))
			for j := range dimV {
				U[t*dimV+j] -= a * U[s*dimV+j]
			}
			for i := range dimK {
				W[t*dimK+i] -= a * W[s*dimK+i]
			}
		}
	}
	// δ = U − W·S₀, in place of U.
	for t := range L {
		for j := range dimV {
			var ws float32
			for i := range dimK {
				ws += W[t*dimK+i] * S[i*dimV+j]
			}
			U[t*dimV+j] -= ws
		}
	}
	for t := range L {
		qt := q[t*dimK : (t+1)*dimK]
		for j := range dimV {
			var o float32
			for i := range dimK {
				o += qt[i] * S[i*dimV+j]
			}
			o *= exp32(G[t])
			for s := 0; s <= t; s++ {
				o += exp32(G[t]-G[s]) * dot32(qt, kt(s)) * U[s*dimV+j]
			}
			out[t*dimV+j] = o
		}
	}
	last := G[L-1]
	for i := range dimK {
		for j := range dimV {
			x := exp32(last) * S[i*dimV+j]
			for s := range L {
				x += exp32(last-G[s]) * k[s*dimK+i] * U[s*dimV+j]
			}
			S[i*dimV+j] = x
		}
	}
}
