package main

import (
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/tokenizer"
)

// TestModelsListsQwen3MoE: grpo models names every architecture with an
// example hub id, Qwen3-MoE's included, and the MoE shapes with their
// active parameters.
func TestModelsListsQwen3MoE(t *testing.T) {
	code, out, errOut := runCaptured(t, "models")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range [][]string{
		{"qwen3_moe", "Qwen3-MoE", "Qwen/Qwen3-30B-A3B-Instruct-2507"},
		{"qwen3 ", "Qwen/Qwen3-0.6B"},
		{"qwen2", "Qwen/Qwen2.5-0.5B-Instruct"},
		{"llama", "meta-llama/Llama-3.2-1B-Instruct"},
		{"qwen3-30b-a3b", "qwen3_moe", "30532.1M", "3353.0M"},
		{"qwen3_5 ", "Qwen/Qwen3.5-4B", "the CUDA decode graph and prompt sharing in training still to come"},
		{"qwen3_5_moe", "Qwen/Qwen3.6-35B-A3B"},
		{"glm4_moe", "GLM-4.5 / INTELLECT-3", "PrimeIntellect/INTELLECT-3", "glm45"},
		{"nemotron_h", "Nemotron-3", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "qwen3_coder", "config and blocks on the CPU path"},
		{"nemotron-3-super-120b-a12b", "nemotron_h", "120668.7M", "12770.2M"},
		{"gpt_oss", "gpt-oss", "openai/gpt-oss-20b", "openai", "MXFP4 experts kept MXFP4 on cuda/emu"},
	} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(line, w)
			}
			found = found || ok
		}
		if !found {
			t.Errorf("no line with %q in:\n%s", want, out)
		}
	}
}

// TestModelsToolCallFormats: every family, supported or not yet, names
// the tool-call format its checkpoints' templates write, and each name is
// one grpo parses (tokenizer.ToolCallFormatNamed): GLM-4.5's glm45,
// Nemotron-3's qwen3_coder (its templates write Qwen3-Coder's XML calls,
// which vLLM reads with --tool-call-parser qwen3_coder), gpt-oss's harmony
// ("openai", vLLM's name).
func TestModelsToolCallFormats(t *testing.T) {
	names := map[string]string{}
	for _, a := range model.Archs() {
		names[a.ModelType] = a.ToolCalls
	}
	for _, p := range model.PendingFamilies() {
		names[p.ModelType] = p.ToolCalls
	}
	want := map[string]tokenizer.ToolCallFormat{"glm4_moe": tokenizer.ToolCallsGLM, "nemotron_h": tokenizer.ToolCallsQwenXML,
		"gpt_oss": tokenizer.ToolCallsHarmony, "qwen3_5": tokenizer.ToolCallsQwenXML, "qwen3": tokenizer.ToolCallsHermes, "llama": tokenizer.ToolCallsLlama3}
	for typ, name := range names {
		f, ok := tokenizer.ToolCallFormatNamed(name)
		if !ok || f == tokenizer.ToolCallsNone {
			t.Errorf("%s: tool calls %q is no format grpo reads", typ, name)
		}
		if w, listed := want[typ]; listed && f != w {
			t.Errorf("%s: %v, want %v", typ, f, w)
		}
	}
}
