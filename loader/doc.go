// Package loader opens a model for use, the same way for every command and
// embedding program: the backend for a device, the model id resolved to a
// local directory (a directory as it is, the Hugging Face cache, or a
// download), the tokenizer, the weights, the check that the tokenizer's ids
// all fit the model's vocabulary, and an optional PEFT LoRA adapter.
//
//	l, err := loader.Open(ctx, loader.Spec{Model: "Qwen/Qwen3-0.6B", Device: "cpu", Adapter: "runs/x/adapter"})
//	// l.Model runs the adapted model, l.Tokenizer encodes for it.
//
// It sits above model, tokenizer and lora so that model never needs lora;
// trainer, eval, gepa, serve and cmd/grpo import it.
//
// The "cpu" backend is always available here. A program that wants "cuda"
// imports kernels/cuda behind the cuda build tag itself (as cmd/grpo
// does): linking the driver binding exits a process on a machine without
// a driver, so a library must not make that choice for its importers.
package loader
