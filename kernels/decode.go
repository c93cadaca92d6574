package kernels

import (
	"fmt"
	"math"
)

// DecodeOps are what a static decode step needs beyond Ops and Sample, so
// that one step reads nothing from the host: positions advanced on the
// device, and the sampling draws made from random streams kept on the
// device.
type DecodeOps interface {
	// AddI32 computes out = a + b over n I32 elements (two's-complement
	// wrap-around, as Go's int32 addition); out may alias a or b. A decode
	// step advances its positions with it (pos += live, 1 for a sequence,
	// 0 for a padding row).
	AddI32(out, a, b Buffer, n int)

	// SampleStream is Sample with its host arguments in device buffers:
	// params (I32, rows × SampleParamWords) holds each row's parameters
	// as PackSampleParams wrote them, and state (I32, rows × PCGWords)
	// each row's random stream as PackPCG wrote it. A row with
	// Temperature > 0 first takes u = the stream's next Float64 — exactly
	// the value rand.New(pcg).Float64() of math/rand/v2 would return —
	// and advances its state by that one draw; a row at Temperature 0
	// draws nothing and leaves its state. Then the row is sampled as
	// Sample with that u. Tokens equal Sample's given the same draws, so
	// a host that mirrors the streams (one Float64 per token sampled at
	// Temperature > 0) stays in step with the device.
	SampleStream(token, logprob, logits, params, state Buffer, rows, vocab int)

	// AttentionSharedPrefix is Attention for a decode step whose tokens
	// come in groups sharing their sequences' leading cache blocks (a
	// GRPO group's rollouts of one prompt), and equals it on the same
	// operands: it differs only in what it reads. groups (I32, nTok ×
	// PrefixGroupWords, see PrefixGroups) names each token's group; a
	// backend may read a group's shared blocks once for all its members'
	// query heads, and each token's own positions past them separately,
	// merging the two softmax partials. The groups must satisfy
	// CheckPrefixGroups; a token in no group ({t, 1, 0}) is attended as
	// Attention does. out may be BF16 where Attention's may (beside a
	// BF16 q) and is refused, with a panic naming this op, elsewhere.
	AttentionSharedPrefix(out, lse, q, kCache, vCache, seq, pos, groups Buffer, pages KVPages, nTok, nHead, nKV, headDim int, scale float32, variant AttentionVariant)
}

// SampleParamWords is the I32 words of one row of SampleStream's params:
// five float64 {u, temperature, top_p, min_p, top_k}, little-endian.
const SampleParamWords = 10

// PCGWords is the I32 words of one row of SampleStream's state: the PCG's
// two uint64 halves {hi, lo}, little-endian.
const PCGWords = 4

// PackSampleParams writes the rows of p into dst (len(p) ×
// SampleParamWords) in SampleStream's layout; u starts at 0 (the device
// writes each draw there). TopK ≥ vocab keeps every candidate, as 0 does:
// it is clamped to vocab, so the double is exact and in range.
func PackSampleParams(dst []int32, p []SampleParams, vocab int) {
	if len(dst) != len(p)*SampleParamWords {
		panic(fmt.Sprintf("kernels: PackSampleParams: %d words for %d rows", len(dst), len(p)))
	}
	for r, q := range p {
		if err := q.Validate(); err != nil {
			panic(fmt.Sprintf("kernels: PackSampleParams: row %d: %v", r, err))
		}
		w := dst[r*SampleParamWords : (r+1)*SampleParamWords]
		for i, v := range [5]float64{0, q.Temperature, q.TopP, q.MinP, float64(min(q.TopK, vocab))} {
			putU64(w[2*i:], math.Float64bits(v))
		}
	}
}

// UnpackSampleParams reads one row of SampleStream's params: its u and
// parameters (TopK as clamped by PackSampleParams).
func UnpackSampleParams(w []int32) (u float64, p SampleParams) {
	f := func(i int) float64 { return math.Float64frombits(getU64(w[2*i:])) }
	return f(0), SampleParams{Temperature: f(1), TopP: f(2), MinP: f(3), TopK: int(f(4))}
}

// PackPCG writes a PCG state (math/rand/v2's PCG fields hi and lo) into
// one row of SampleStream's state.
func PackPCG(dst []int32, hi, lo uint64) {
	putU64(dst[0:], hi)
	putU64(dst[2:], lo)
}

// UnpackPCG reads one row of SampleStream's state.
func UnpackPCG(w []int32) (hi, lo uint64) { return getU64(w[0:]), getU64(w[2:]) }

func putU64(w []int32, v uint64) { w[0], w[1] = int32(uint32(v)), int32(uint32(v>>32)) }

func getU64(w []int32) uint64 { return uint64(uint32(w[0])) | uint64(uint32(w[1]))<<32 }

// Graphs is implemented by backends that can record a sequence of ops once
// and replay it (CUDA graphs; emu records the launch list), so a decode
// step costs one launch instead of hundreds. It is optional: test for it
// with a type assertion; the CPU backend, with no launch cost, runs ops as
// they come.
type Graphs interface {
	// BeginCapture starts recording: the ops that follow are recorded,
	// not run, until EndCapture. Between the two only device work may be
	// issued — no Alloc, Free, Upload, Download or Sync — so every buffer
	// the recorded ops use must exist before. An op that breaks this
	// fails the capture.
	BeginCapture() error
	// EndCapture returns the recorded ops as a graph.
	EndCapture() (Graph, error)
	// Replay queues the graph's ops again, with the same buffers and
	// arguments; the buffers' contents at that point in the queue are what
	// they read. Errors surface at Sync.
	Replay(g Graph)
	// FreeGraph releases a graph; the buffers it used are the caller's.
	FreeGraph(g Graph)
}

// Graph is a backend's recorded sequence of ops.
type Graph interface{ graph() }

// GraphHandle is embedded by backends' graph types.
type GraphHandle struct{}

func (GraphHandle) graph() {}
