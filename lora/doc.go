// Package lora owns LoRA adapters: their parameters on a kernels.Backend
// (PEFT initialisation, alpha/r or rsLoRA scaling, gradient buffers), the
// PEFT on-disk format (adapter_config.json + adapter_model.safetensors, read
// and written so that PEFT and vLLM load what grpo writes and grpo loads
// what they write), and merging an adapter into base weights.
//
// The maths of applying an adapter lives in package model (model.LoRA,
// model.Adapter); an *Adapter here implements model.Adapter, so
//
//	ad, err := lora.Load("runs/x/adapter", m)
//	logits, err := m.WithAdapter(ad).Logits(cache, batch, nil)
//
// runs the adapted model. Matrix layout follows PEFT: A is rank × in and B
// is out × rank, so a projection computes y = x·Wᵀ + scale·(x·Aᵀ)·Bᵀ.
//
// Names follow the HF model's module tree (keys.go): model.layers.N for a
// causal LM, model.language_model.layers.N for Qwen3.5. What each
// target_modules name and "all-linear" adapt per architecture is in
// targets.go; Qwen3.5-MoE's routed experts are written in PEFT's and
// vLLM's fused target_parameters form (experts_fused.go). docs/lora.md
// has the user's view and the sources.
package lora
