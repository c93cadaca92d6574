package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/grpo-dev/grpo/model/safetensors"
)

// Init scales: large enough that attention patterns, norm weights and
// biases all visibly change the logits (a forward pass that drops any of
// them fails the golden comparison), small enough that nothing saturates.
const (
	embedStd  = 0.1 // embeddings and an untied lm_head: logits std ≈ 0.1·√hidden
	linearStd = 0.08
	biasStd   = 0.1
	normNoise = 0.1 // norm weights are 1 ± this
)

// param is one tensor to generate: its HF name, [out, in]-style shape, and
// how to draw its values.
type param struct {
	name  string
	shape []int
	mean  float64
	std   float64
	f32   bool                        // stored as F32 even in a bf16 checkpoint (Qwen3.5's A_log)
	bf16  bool                        // stored as BF16 even in an f32 checkpoint (gpt-oss's bf16 experts)
	slice func(seed string) []float32 // when set, the values (a part of another tensor's stream) instead of a draw
	raw   []byte                      // when set, a U8 tensor of these bytes (gpt-oss's MXFP4 blocks and scales)
}

// params lists the tensors of s in HF state-dict order (embeddings, layers
// in order, final norm, head); sharding splits this list.
func params(s spec) []param {
	if s.arch == qwen35 || s.arch == qwen35MoE {
		return qwen35Params(s)
	}
	if s.arch == glm4MoE {
		return glmParams(s)
	}
	if s.arch == nemotronH {
		return nemotronParams(s)
	}
	if s.arch == gptOss {
		return gptOssParams(s)
	}
	q, kv := s.heads*s.headDim, s.kvHeads*s.headDim
	ps := []param{{name: "model.embed_tokens.weight", shape: []int{s.vocab, s.hidden}, std: embedStd}}
	for l := range s.layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		ps = append(ps, norm(p+"input_layernorm.weight", s.hidden),
			lin(p+"self_attn.q_proj.weight", q, s.hidden),
			lin(p+"self_attn.k_proj.weight", kv, s.hidden),
			lin(p+"self_attn.v_proj.weight", kv, s.hidden))
		if s.arch == qwen2 {
			ps = append(ps, bias(p+"self_attn.q_proj.bias", q),
				bias(p+"self_attn.k_proj.bias", kv),
				bias(p+"self_attn.v_proj.bias", kv))
		}
		if s.arch == qwen3 || s.arch == qwen3MoE {
			ps = append(ps, norm(p+"self_attn.q_norm.weight", s.headDim),
				norm(p+"self_attn.k_norm.weight", s.headDim))
		}
		ps = append(ps, lin(p+"self_attn.o_proj.weight", s.hidden, q),
			norm(p+"post_attention_layernorm.weight", s.hidden))
		if s.sparse(l) {
			ps = append(ps, moeParams(s, p)...)
			continue
		}
		ps = append(ps, lin(p+"mlp.gate_proj.weight", s.intermediate, s.hidden),
			lin(p+"mlp.up_proj.weight", s.intermediate, s.hidden),
			lin(p+"mlp.down_proj.weight", s.hidden, s.intermediate))
	}
	ps = append(ps, norm("model.norm.weight", s.hidden))
	if !s.tied {
		ps = append(ps, param{name: "lm_head.weight", shape: []int{s.vocab, s.hidden}, std: embedStd})
	}
	return ps
}

// routerStd is the router's init: logits std ≈ routerStd·√hidden ≈ 4, so
// the k-th and (k+1)-th experts of a token are far apart and no float32
// rounding flips a golden's routing (reference.py checks the margins).
const routerStd = 0.5

// sparse reports whether layer l of s has a mixture-of-experts MLP
// (decoder_sparse_step 1: every layer not in mlp_only_layers).
func (s spec) sparse(l int) bool {
	if s.arch != qwen3MoE {
		return false
	}
	for _, d := range s.mlpOnly {
		if d == l {
			return false
		}
	}
	return true
}

// moeParams are a sparse layer's router and experts, in the order of HF's
// Qwen3MoeSparseMoeBlock state dict.
func moeParams(s spec, p string) []param {
	ps := []param{{name: p + "mlp.gate.weight", shape: []int{s.experts, s.hidden}, std: routerStd}}
	for e := range s.experts {
		x := fmt.Sprintf("%smlp.experts.%d.", p, e)
		ps = append(ps, param{name: x + "gate_proj.weight", shape: []int{s.moeInter, s.hidden}, std: linearStd},
			param{name: x + "up_proj.weight", shape: []int{s.moeInter, s.hidden}, std: linearStd},
			param{name: x + "down_proj.weight", shape: []int{s.hidden, s.moeInter}, std: linearStd})
	}
	return ps
}

// values draws p's elements from a PCG stream seeded by the model and
// tensor names, so adding or reordering tensors never changes the others.
// Normals come from Box–Muller over the raw stream rather than
// rand.NormFloat64, whose algorithm Go does not promise to keep.
func values(model string, p param) []float32 {
	h := fnv.New64a()
	h.Write([]byte(model + "\x00" + p.name))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x6772706f)) // "grpo"
	n := 1
	for _, d := range p.shape {
		n *= d
	}
	out := make([]float32, n)
	for i := 0; i < n; i += 2 {
		u1 := (float64(rng.Uint64()>>11) + 0.5) / (1 << 53) // in (0,1): log is finite
		u2 := float64(rng.Uint64()>>11) / (1 << 53)
		r := math.Sqrt(-2 * math.Log(u1))
		out[i] = float32(p.mean + p.std*r*math.Cos(2*math.Pi*u2))
		if i+1 < n {
			out[i+1] = float32(p.mean + p.std*r*math.Sin(2*math.Pi*u2))
		}
	}
	return out
}

// writeModel writes config.json and the weights of s into dir, replacing
// any weight files a previous layout left behind.
func writeModel(dir string, s spec) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "model*.safetensors*"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(configJSON(s)), 0o644); err != nil {
		return err
	}
	var tensors []safetensors.Tensor
	for _, p := range params(s) {
		if p.raw != nil {
			t, err := safetensors.NewTensor(p.name, safetensors.U8, p.shape, p.raw)
			if err != nil {
				return err
			}
			tensors = append(tensors, t)
			continue
		}
		newT := safetensors.NewF32
		if s.bf16 && !p.f32 || p.bf16 {
			newT = safetensors.NewBF16
		}
		v := values(s.seedName(), p)
		if p.slice != nil {
			v = p.slice(s.seedName())
		}
		t, err := newT(p.name, p.shape, v)
		if err != nil {
			return err
		}
		tensors = append(tensors, t)
	}
	meta := map[string]string{"format": "pt"} // what torch's save_file writes
	if s.shards == 0 {
		return safetensors.Write(filepath.Join(dir, safetensors.SingleFileName), tensors, meta)
	}
	return writeShards(dir, s.shards, tensors, meta)
}

// writeShards splits tensors (in state-dict order) into n contiguous runs of
// about equal byte size, named and indexed as transformers' save_pretrained
// names them.
func writeShards(dir string, n int, tensors []safetensors.Tensor, meta map[string]string) error {
	total := 0
	for _, t := range tensors {
		total += len(t.Bytes())
	}
	weightMap := map[string]any{}
	start, done := 0, 0
	for k := range n {
		file := fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, n)
		end := start
		for end < len(tensors) && (k == n-1 || done < total*(k+1)/n) {
			done += len(tensors[end].Bytes())
			end++
		}
		if end == start {
			return fmt.Errorf("shard %s would be empty: fewer tensors than shards", file)
		}
		for _, t := range tensors[start:end] {
			weightMap[t.Name] = file
		}
		if err := safetensors.Write(filepath.Join(dir, file), tensors[start:end], meta); err != nil {
			return err
		}
		start = end
	}
	index := map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}
	text := pyJSON(index, "") + "\n"
	if !json.Valid([]byte(text)) {
		return fmt.Errorf("index JSON is malformed") // guards pyJSON, not input
	}
	return os.WriteFile(filepath.Join(dir, safetensors.IndexFileName), []byte(text), 0o644)
}

// lin, norm and bias are a linear layer's weight (out × in), a norm's
// weight (ones plus noise) and a bias, with the tiny models' spreads.
func lin(name string, out, in int) param {
	return param{name: name, shape: []int{out, in}, std: linearStd}
}
func norm(name string, n int) param {
	return param{name: name, shape: []int{n}, mean: 1, std: normNoise}
}
func bias(name string, n int) param { return param{name: name, shape: []int{n}, std: biasStd} }

// routedExperts are a sparse layer's routed experts below prefix p
// (mlp.experts.): fused (gate_up_proj and down_proj, transformers' 3-D
// layout) or one module per expert (gate/up/down_proj), each expert's
// values the fused tensors' rows, so both layouts hold the same model.
func routedExperts(p string, s spec, fused bool) []param {
	gateUp := param{name: p + "gate_up_proj", shape: []int{s.experts, 2 * s.moeInter, s.hidden}, std: linearStd}
	down := param{name: p + "down_proj", shape: []int{s.experts, s.hidden, s.moeInter}, std: linearStd}
	if fused {
		return []param{gateUp, down}
	}
	var ps []param
	for e := range s.experts {
		x := fmt.Sprintf("%s%d.", p, e)
		ps = append(ps,
			param{name: x + "gate_proj.weight", shape: []int{s.moeInter, s.hidden}, slice: rows(gateUp, e, 0, s.moeInter)},
			param{name: x + "up_proj.weight", shape: []int{s.moeInter, s.hidden}, slice: rows(gateUp, e, s.moeInter, 2*s.moeInter)},
			param{name: x + "down_proj.weight", shape: []int{s.hidden, s.moeInter}, slice: rows(down, e, 0, s.hidden)})
	}
	return ps
}
