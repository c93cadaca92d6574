package model

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/golden"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// gptOssLoRAGolden is testdata/reference/gpt_oss_lora_grad.py's golden.
const gptOssLoRAGolden = "gpt_oss_lora_grad.json"

// TestGptOssLoRAGradientsMatchPyTorch is the gpt-oss training bar: an
// adapter on q/k/v/o and, in PEFT's target_parameters form, on every
// layer's experts (gate_up_proj and down_proj): log-probs of a 64-token
// sequence within 1e-4 of the float64 reference and every gradient within
// NMSE 1e-6 of autograd's, through the sinks and the sliding window, the
// clamped SwiGLU, the expert biases and the biased top-k router.
func TestGptOssLoRAGradientsMatchPyTorch(t *testing.T) {
	for _, name := range gptOssModels {
		t.Run(name, func(t *testing.T) { checkGptOssLoRAGrad(t, cpu.New(), name, 1e-4, 1e-6) })
	}
}

// gptOssExpertGolden is one expert Parameter's adapter in the golden: its
// grpo pairs (gate and up share PEFT's A) and PEFT's gradients.
type gptOssExpertGolden struct {
	param        string
	pairs        []*ExpertLoRA // gate, up; or down
	gradA, gradB []float32
	out          int // the Parameter's out features
}

// checkGptOssLoRAGrad runs the golden's adapter through ForwardTrain and
// Backward of the tiny model name (the golden's or a twin holding the same
// weights) on be. maxLogp and maxNMSE are the bars on the log-probs and
// each gradient. It returns the log-probs and every gradient, in order.
func checkGptOssLoRAGrad(t *testing.T, be kernels.Backend, name string, maxLogp, maxNMSE float64) (logp []float32, grads [][]float32) {
	var g loraGradGolden
	vals, err := golden.Read(filepath.Join("..", "testdata"), gptOssLoRAGolden, &g)
	if err != nil {
		t.Fatal(err)
	}
	raw := map[string]any{}
	if _, err := golden.Read(filepath.Join("..", "testdata"), gptOssLoRAGolden, &raw); err != nil {
		t.Fatal(err)
	}
	gm := g.Models[0]
	if !strings.HasPrefix(name, gm.Model) {
		t.Fatalf("the golden is %s's, not %s's", gm.Model, name)
	}
	m, err := Load(filepath.Join("..", "testdata", "models", name), be)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config
	entry := raw["models"].([]any)[0].(map[string]any)
	arr := func(mm map[string]any, key string) []float32 {
		a := mm[key].(map[string]any)
		var shape []int
		for _, d := range a["shape"].([]any) {
			shape = append(shape, int(d.(float64)))
		}
		v, err := golden.Array{Offset: int(a["offset"].(float64)), Shape: shape}.Of(vals)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	up := func(v []float32) kernels.Buffer {
		b := be.Alloc(kernels.F32, len(v))
		be.Upload(b, v)
		return b
	}
	download := func(b kernels.Buffer) []float32 {
		v := make([]float32, b.Len())
		be.Download(v, b)
		return v
	}
	ad := &moeTestAdapter{testAdapter: &testAdapter{l: make([][NumProj]*LoRA, c.NumLayers)},
		experts: make([][NumProj]*ExpertLoRA, c.NumLayers), routers: make([]*LoRA, c.NumLayers)}
	type want struct {
		lr           *LoRA
		gradA, gradB []float32
		name         string
	}
	var wants []want
	for _, mod := range entry["lora"].([]any) {
		mm := mod.(map[string]any)
		name := mm["module"].(string)
		l, p, err := parseModule(c, name)
		if err != nil {
			t.Fatal(err)
		}
		av, bv := arr(mm, "A"), arr(mm, "B")
		lr := &LoRA{A: up(av), B: up(bv), DA: be.Alloc(kernels.F32, len(av)), DB: be.Alloc(kernels.F32, len(bv)), Rank: g.Rank, Scale: g.Scale}
		ad.l[l][p] = lr
		wants = append(wants, want{lr, arr(mm, "grad_A"), arr(mm, "grad_B"), name})
	}
	ne, r := c.NumExperts, g.Rank
	var experts []gptOssExpertGolden
	for _, ex := range entry["experts"].([]any) {
		mm := ex.(map[string]any)
		name := mm["parameter"].(string)
		var l int
		var param string
		if _, err := fmtSscan(name, &l, &param); err != nil {
			t.Fatal(err)
		}
		av, bv := arr(mm, "A"), arr(mm, "B")
		projs := []Proj{ProjDown}
		if param == "gate_up_proj" {
			projs = []Proj{ProjGate, ProjUp}
		}
		eg := gptOssExpertGolden{param: name, gradA: arr(mm, "grad_A"), gradB: arr(mm, "grad_B"), out: len(bv) / (r * ne)}
		for _, p := range projs {
			_, pout := c.ExpertDims(p)
			b := make([]float32, ne*pout*r)
			for e := range ne {
				for o := range pout {
					for k := range r {
						b[(e*pout+o)*r+k] = bv[gptOssParamRow(p, o, len(projs) == 2)*r*ne+k*ne+e]
					}
				}
			}
			lr := &ExpertLoRA{A: up(av), B: up(b), DA: be.Alloc(kernels.F32, len(av)), DB: be.Alloc(kernels.F32, len(b)), Rank: r, Scale: g.Scale}
			ad.experts[l][p] = lr
			eg.pairs = append(eg.pairs, lr)
		}
		experts = append(experts, eg)
	}
	m = m.WithAdapter(ad)
	weights, _ := gm.Weights.Of(vals)
	wantLp, _ := gm.Logprobs.Of(vals)
	var b Batch
	b.Add(0, 0, g.Tokens[:len(g.Tokens)-1]...)
	tr, err := m.ForwardTrain(&b, nil, g.Tokens[1:])
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	lp := download(tr.Logp)
	if d := maxAbsDiff(lp, wantLp); d > maxLogp {
		t.Errorf("log-probs: max |Δ| %.3g > %g", d, maxLogp)
	} else {
		t.Logf("log-probs: max |Δ| %.3g", d)
	}
	dlogp := up(weights)
	if err := tr.Backward(dlogp); err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	check := func(what string, got, want []float32) {
		grads = append(grads, got)
		e := nmse(got, want)
		worst = max(worst, e)
		if e > maxNMSE {
			t.Errorf("%s: gradient NMSE %.3g > %g", what, e, maxNMSE)
		}
	}
	for _, w := range wants {
		check(w.name+" lora_A", download(w.lr.DA), w.gradA)
		check(w.name+" lora_B", download(w.lr.DB), w.gradB)
	}
	for _, eg := range experts {
		// PEFT's one A serves gate and up: its gradient is the sum of
		// the two pairs'; B's rows are each pair's.
		gotA := make([]float32, len(eg.gradA))
		gotB := make([]float32, len(eg.gradB))
		for i, lr := range eg.pairs {
			for j, v := range download(lr.DA) {
				gotA[j] += v
			}
			p := ProjDown
			if len(eg.pairs) == 2 {
				p = []Proj{ProjGate, ProjUp}[i]
			}
			_, pout := c.ExpertDims(p)
			db := download(lr.DB)
			for e := range ne {
				for o := range pout {
					for k := range r {
						gotB[gptOssParamRow(p, o, len(eg.pairs) == 2)*r*ne+k*ne+e] = db[(e*pout+o)*r+k]
					}
				}
			}
		}
		check(eg.param+" lora_A", gotA, eg.gradA)
		check(eg.param+" lora_B", gotB, eg.gradB)
	}
	t.Logf("%d modules and %d expert Parameters: worst gradient NMSE %.3g", len(wants), len(experts), worst)
	return lp, grads
}

// gptOssParamRow is the row of gpt-oss's gate_up_proj (interleaved: gate
// j at 2j, up j at 2j+1) holding row o of projection p; down_proj's rows
// are its own.
func gptOssParamRow(p Proj, o int, gateUp bool) int {
	switch {
	case !gateUp:
		return o
	case p == ProjGate:
		return 2 * o
	default:
		return 2*o + 1
	}
}

// fmtSscan parses model.layers.N.mlp.experts.PARAM.
func fmtSscan(name string, l *int, param *string) (int, error) {
	n, err := fmt.Sscanf(strings.ReplaceAll(name, ".", " "), "model layers %d mlp experts %s", l, param)
	return n, err
}
