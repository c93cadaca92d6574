// Command gen makes the CPU demo's fixtures, deterministically:
//
//	examples/demo/env/    the task, as a custom environment: reverse a short
//	                      lowercase word; reward = difflib ratio
//	examples/demo/model/  a tiny Qwen3 model (259-token byte tokenizer,
//	                      ChatML template) warm-started by supervised
//	                      fine-tuning to partial competence on the task
//
// Random initialisation cannot find this task's reward by chance in a few
// minutes, so the model starts part-way: SFT stops as soon as the sampled
// reward reaches -target, and GRPO has the rest to learn. SFT trains a LoRA
// adapter with grpo's own backward (the GRPO loss with advantage 1 and
// on-policy log-probs is the negative log-likelihood) and merges it.
//
// Run from the repository root: go run ./examples/demo/gen
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
	"github.com/grpo-dev/grpo/trainer"
)

func main() {
	out := flag.String("out", "examples/demo", "output directory")
	target := flag.Float64("target", 0.45, "stop SFT when the sampled eval reward reaches this")
	maxSteps := flag.Int("max-steps", 800, "SFT step limit")
	sftLR = flag.Float64("lr", 1e-2, "SFT learning rate")
	flag.Parse()
	if err := run(*out, *target, *maxSteps); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

var sftLR *float64

func run(out string, target float64, maxSteps int) error {
	envDir := filepath.Join(out, "env")
	if err := writeEnv(envDir); err != nil {
		return err
	}
	raw, err := os.MkdirTemp("", "demo-model-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(raw)
	if err := writeTokenizer(raw); err != nil {
		return err
	}
	if err := writeRandomModel(raw); err != nil {
		return err
	}
	ad, err := warmStart(raw, envDir, target, maxSteps)
	if err != nil {
		return err
	}
	modelDir := filepath.Join(out, "model")
	if err := os.RemoveAll(modelDir); err != nil {
		return err
	}
	if err := lora.WriteMerged(modelDir, raw, ad); err != nil {
		return err
	}
	fmt.Println("wrote", modelDir, "and", envDir)
	return nil
}

// writeEnv writes the task: 4000 training and 200 eval words of 3 to 5
// letters, and environment.toml.
func writeEnv(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(2024, 11))
	seen := map[string]bool{}
	word := func() string {
		for {
			b := make([]byte, 3+rng.IntN(3))
			for i := range b {
				b[i] = byte('a' + rng.IntN(26))
			}
			if w := string(b); !seen[w] {
				seen[w] = true
				return w
			}
		}
	}
	for _, split := range []struct {
		file string
		n    int
	}{{"train.jsonl", 4000}, {"eval.jsonl", 200}} {
		var b strings.Builder
		for range split.n {
			w := word()
			line, _ := json.Marshal(map[string]string{"question": w, "answer": reverse(w)})
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, split.file), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	toml := `# The CPU demo's task (written by examples/demo/gen): reverse a short word.
id = "demo-reverse"
description = "reverse a 3-5 letter lowercase word; reward = difflib ratio to the reversal"
prompt_template = "reverse {question}"
parser = "none"

[dataset]
train = "train.jsonl"
eval = "eval.jsonl"

[[rubric]]
type = "ratio"
name = "reversal_ratio"
weight = 1.0
`
	return os.WriteFile(filepath.Join(dir, env.ConfigFile), []byte(toml), 0o644)
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// modelConfig is the demo model's shape: Qwen3 layout, ~0.2M parameters.
var modelConfig = map[string]any{
	"architectures": []string{"Qwen3ForCausalLM"}, "model_type": "qwen3",
	"hidden_size": 64, "intermediate_size": 192, "num_hidden_layers": 2,
	"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
	"vocab_size": vocabSize, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
	"rope_theta": 10000, "tie_word_embeddings": true, "hidden_act": "silu",
	"attention_bias": false, "torch_dtype": "float32",
	"bos_token_id": tokEndOfText, "eos_token_id": tokIMEnd,
}

func writeRandomModel(dir string) error {
	data, _ := json.MarshalIndent(modelConfig, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		return err
	}
	cfg, err := model.ParseConfig(data)
	if err != nil {
		return err
	}
	be := cpu.New()
	m := model.NewRandom(cfg, be, 7)
	var ts []safetensors.Tensor
	add := func(name string, shape []int, b kernels.Buffer) error {
		v := make([]float32, b.Len())
		be.Download(v, b)
		t, err := safetensors.NewF32(name, shape, v)
		ts = append(ts, t)
		return err
	}
	h, q, kv, inter := cfg.HiddenSize, cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim, cfg.IntermediateSize
	// NewRandom's N(0, 0.02) embeddings are too small for a model this
	// narrow: give the embedding (tied to the head) unit-scale rows.
	emb := make([]float32, cfg.VocabSize*h)
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range emb {
		emb[i] = float32(rng.NormFloat64() * 0.5)
	}
	be.Upload(m.W.Embed, emb)
	if err := add("model.embed_tokens.weight", []int{cfg.VocabSize, h}, m.W.Embed); err != nil {
		return err
	}
	if err := add("model.norm.weight", []int{h}, m.W.Norm); err != nil {
		return err
	}
	for i, l := range m.W.Layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		for _, x := range []struct {
			name  string
			shape []int
			b     kernels.Buffer
		}{
			{"input_layernorm.weight", []int{h}, l.InputNorm}, {"post_attention_layernorm.weight", []int{h}, l.PostAttnNorm},
			{"self_attn.q_proj.weight", []int{q, h}, l.Q}, {"self_attn.k_proj.weight", []int{kv, h}, l.K},
			{"self_attn.v_proj.weight", []int{kv, h}, l.V}, {"self_attn.o_proj.weight", []int{h, q}, l.O},
			{"self_attn.q_norm.weight", []int{cfg.HeadDim}, l.QNorm}, {"self_attn.k_norm.weight", []int{cfg.HeadDim}, l.KNorm},
			{"mlp.gate_proj.weight", []int{inter, h}, l.Gate}, {"mlp.up_proj.weight", []int{inter, h}, l.Up},
			{"mlp.down_proj.weight", []int{h, inter}, l.Down},
		} {
			if err := add(p+x.name, x.shape, x.b); err != nil {
				return err
			}
		}
	}
	return safetensors.Write(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"})
}

// warmStart fine-tunes a LoRA adapter on the task's answers until the
// sampled eval reward reaches target.
func warmStart(modelDir, envDir string, target float64, maxSteps int) (*lora.Adapter, error) {
	be := cpu.New()
	m, err := model.Load(modelDir, be)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(modelDir)
	if err != nil {
		return nil, err
	}
	e, err := env.New(envDir, nil)
	if err != nil {
		return nil, err
	}
	train, err := e.Examples("train")
	if err != nil {
		return nil, err
	}
	lc := lora.Config{Rank: 32, Alpha: 32, TargetModules: lora.AllModules}
	ad, err := lora.New(m, lc, 3)
	if err != nil {
		return nil, err
	}
	policy := m.WithAdapter(ad)
	var params []trainer.Param
	for _, p := range ad.Params() {
		params = append(params, trainer.Param{Name: p.Name, Value: p.Value, Grad: p.Grad})
	}
	oc := trainer.DefaultOptimizer()
	oc.LR = *sftLR
	opt, err := trainer.NewAdamW(be, params, oc)
	if err != nil {
		return nil, err
	}
	loss := trainer.DefaultLoss()
	rng := rand.New(rand.NewPCG(5, 5))
	const batch = 32
	for step := 1; step <= maxSteps; step++ {
		var samples []trainer.Sample
		nll, ntok := 0.0, 0
		for range batch {
			ex := train[rng.IntN(len(train))]
			prompt, err := env.RenderPrompt(tok, ex.Prompt, nil)
			if err != nil {
				return nil, err
			}
			completion := append(tok.Encode(ex.Answer), tokIMEnd)
			seq := append(append([]int32{}, prompt...), completion...)
			old, err := policy.TokenLogprobs(seq, len(prompt))
			if err != nil {
				return nil, err
			}
			for _, lp := range old {
				nll -= float64(lp)
				ntok++
			}
			samples = append(samples, trainer.Sample{Prompt: prompt, Completion: completion, OldLogp: old, Advantage: 1})
		}
		if _, err := trainer.PolicyGradient(policy, samples, loss, 0, 1<<20); err != nil {
			return nil, err
		}
		if _, err := opt.Update(maxSteps); err != nil {
			return nil, err
		}
		if step%25 == 0 {
			res, err := trainer.Evaluate(context.Background(), policy, tok, e, "demo", trainer.EvalOptions{
				NumExamples: 64, RolloutsPerExample: 2, Seed: 99,
				Sampling: sampler.Params{Temperature: 1, TopP: 1, MaxTokens: 12}})
			if err != nil {
				return nil, err
			}
			fmt.Printf("sft step %d: nll/token %.3f, sampled eval reward %.3f\n", step, nll/float64(ntok), res.Reward)
			if res.Reward >= target {
				break
			}
		}
	}
	return ad, nil
}
