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
package lora
