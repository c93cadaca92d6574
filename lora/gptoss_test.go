package lora

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	goldenfile "github.com/grpo-dev/grpo/internal/golden"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

// TestGptOssPEFTExperts: the adapter gpt_oss_lora_grad.py writes as PEFT
// does on GptOssForCausalLM (q/k/v/o by target_modules; every layer's
// mlp.experts.gate_up_proj and down_proj by target_parameters, A [E·r,
// in], B [out, r·E], the gate_up wrapper inner: …experts.base_layer.
// lora_{A,B}, gate and up interleaved in B's rows) loads, and the model
// with it gives the reference's log-probs within 1e-4: the key names, the
// orientation and the interleaving all as PEFT has them.
func TestGptOssPEFTExperts(t *testing.T) {
	m := loadModel(t, "gpt_oss-tiny")
	a, err := Load(filepath.Join(root, "testdata", "lora", "gpt_oss-tiny-experts"), m)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Tokens []int32 `json:"tokens"`
		Models []struct {
			Logprobs goldenfile.Array `json:"logprobs"`
		} `json:"models"`
	}
	vals, err := goldenfile.Read(filepath.Join(root, "testdata"), "gpt_oss_lora_grad.json", &g)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := g.Models[0].Logprobs.Of(vals)
	n, v := len(g.Tokens)-1, m.Config.VocabSize
	lg := logits(t, m.WithAdapter(a), g.Tokens[:n])
	worst := 0.0
	for i := range n {
		row := lg[i*v : (i+1)*v]
		mx := float64(slices.Max(row))
		s := 0.0
		for _, x := range row {
			s += math.Exp(float64(x) - mx)
		}
		lp := float64(row[g.Tokens[i+1]]) - mx - math.Log(s)
		worst = max(worst, math.Abs(lp-float64(want[i])))
	}
	if worst > 1e-4 {
		t.Errorf("log-probs with the PEFT adapter: max |Δ| %.3g > 1e-4", worst)
	}
	t.Logf("log-probs with the PEFT adapter: max |Δ| %.3g", worst)
}

// TestGptOssExpertsSaveLoad: grpo's own expert adapter on gpt-oss is saved
// as PEFT's target_parameters (both Parameters of every layer) and loads
// back bit for bit; "all-linear" adapts the attention only (PEFT's: the
// experts are Parameters and the router no Linear).
func TestGptOssExpertsSaveLoad(t *testing.T) {
	m := loadModel(t, "gpt_oss-tiny")
	a, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: AllModules}, 3)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, m, a, []string{"mlp.experts.gate_up_proj", "mlp.experts.down_proj"})
	al, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: []string{AllLinear}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range al.Params() {
		if !strings.Contains(p.Name, "self_attn.") {
			t.Errorf("all-linear adapts %s", p.Name)
		}
	}
	if len(al.Params()) != 2*4*m.Config.NumLayers {
		t.Errorf("all-linear: %d matrices, want q/k/v/o's A and B of %d layers", len(al.Params()), m.Config.NumLayers)
	}
}

// TestGptOssMerge: merging an expert adapter into the f32- and
// bf16-expert checkpoints (their [E, in, out] Parameters, gate and up
// interleaved) gives the model with the adapter, in memory (Merge) and
// written (WriteMerged); WriteMerged refuses the MXFP4 checkpoint, saying
// why.
func TestGptOssMerge(t *testing.T) {
	tokens := []int32{5, 77, 301, 9, 140, 2, 411, 63, 7, 250}
	m := loadModel(t, "gpt_oss-tiny")
	a, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: AllModules}, 3)
	if err != nil {
		t.Fatal(err)
	}
	nonZeroB(t, m, a, 5)
	applied := logits(t, m.WithAdapter(a), tokens)
	if d := maxAbsDiff(logits(t, m, tokens), applied); d < 0.05 {
		t.Fatalf("the adapter moves the logits by only %g", d)
	}
	// f32 experts hold the merged update to f32 rounding; bf16 experts
	// round it once more than the adapter's path.
	for _, c := range []struct {
		name string
		tol  float64
	}{{"gpt_oss-tiny", 1e-5}, {"gpt_oss-tiny-bf16", 5e-3}} {
		out := filepath.Join(t.TempDir(), c.name)
		if err := WriteMerged(out, filepath.Join(root, "testdata", "models", c.name), a); err != nil {
			t.Fatal(err)
		}
		mm, err := model.Load(out, cpu.New())
		if err != nil {
			t.Fatal(err)
		}
		d := maxAbsDiff(logits(t, mm, tokens), applied)
		if d > c.tol {
			t.Errorf("%s: written merged model vs adapter: logits differ by %g", c.name, d)
		}
		t.Logf("%s: written merged model vs adapter: logits differ by %.3g", c.name, d)
		mem := loadModel(t, c.name)
		if err := Merge(mem, a); err != nil {
			t.Fatal(err)
		}
		d = maxAbsDiff(logits(t, mem, tokens), applied)
		if d > c.tol {
			t.Errorf("%s: merged in memory vs adapter: logits differ by %g", c.name, d)
		}
		t.Logf("%s: merged in memory vs adapter: logits differ by %.3g", c.name, d)
	}
	err = WriteMerged(filepath.Join(t.TempDir(), "m4"), filepath.Join(root, "testdata", "models", "gpt_oss-tiny-mxfp4"), a)
	if err == nil || !strings.Contains(err.Error(), "MXFP4") || !strings.Contains(err.Error(), "_proj_blocks") {
		t.Errorf("merging into MXFP4 experts: %v", err)
	}
}

// TestGptOssMergeRefusesKeptMXFP4: where the backend keeps MXFP4 experts
// MXFP4 (emu, as cuda), Merge refuses an adapter on them before changing
// any weight, saying why and what to do; an attention-only adapter merges.
func TestGptOssMergeRefusesKeptMXFP4(t *testing.T) {
	b := emu.New()
	defer b.Close()
	m, err := model.Load(filepath.Join(root, "testdata", "models", "gpt_oss-tiny-mxfp4"), b)
	if err != nil {
		t.Fatal(err)
	}
	if m.W.Layers[0].MoE.GateUpMX == nil {
		t.Fatal("emu did not keep the experts MXFP4")
	}
	tokens := []int32{5, 77, 301, 9, 140}
	before := logits(t, m, tokens)
	a, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: AllModules}, 3)
	if err != nil {
		t.Fatal(err)
	}
	nonZeroB(t, m, a, 5)
	err = Merge(m, a)
	if err == nil || !strings.Contains(err.Error(), "MXFP4") || !strings.Contains(err.Error(), "unmerged") {
		t.Fatalf("merging into kept MXFP4 experts: %v", err)
	}
	if d := maxAbsDiff(logits(t, m, tokens), before); d != 0 {
		t.Errorf("the refused merge changed the logits by %g", d)
	}
	att, err := New(m, Config{Rank: 4, Alpha: 8, TargetModules: []string{"q_proj", "v_proj"}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	nonZeroB(t, m, att, 5)
	if err := Merge(m, att); err != nil {
		t.Errorf("attention-only adapter: %v", err)
	}
}
