package main

import (
	"encoding/json"
	"fmt"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// modelConfig is the demo model's shape: Qwen3 layout, ~0.25M parameters
// at the default hidden size of 96.
func modelConfig(o options) map[string]any {
	return map[string]any{
		"architectures": []string{"Qwen3ForCausalLM"}, "model_type": "qwen3",
		"hidden_size": o.hidden, "intermediate_size": 3 * o.hidden, "num_hidden_layers": o.layers,
		"num_attention_heads": o.hidden / o.headDim, "num_key_value_heads": o.hidden / o.headDim / 2, "head_dim": o.headDim,
		"vocab_size": tinymodel.VocabSize, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
		"rope_theta": o.ropeTheta, "tie_word_embeddings": true, "hidden_act": "silu",
		"attention_bias": false, "torch_dtype": "float32",
		"bos_token_id": tinymodel.EndOfText, "eos_token_id": tinymodel.IMEnd,
	}
}

func writeRandomModel(dir string, o options) error {
	data, _ := json.MarshalIndent(modelConfig(o), "", "  ")
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
	// Qwen3 RMS-normalises q and k per head, so with unit norm weights the
	// attention logits stay within ±sqrt(head_dim): too flat to pick out
	// one letter among the prompt's tokens. The norms are not LoRA
	// targets, so the base must come with the sharper scale.
	qk := make([]float32, cfg.HeadDim)
	for i := range qk {
		qk[i] = float32(o.qkScale)
	}
	for i, l := range m.W.Layers {
		be.Upload(l.QNorm, qk)
		be.Upload(l.KNorm, qk)
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
