package tokenizer

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// The variants of scripts/tokenizer-parity/variants.mjs, derived the same
// way from Qwen3's file, so that one vocabulary covers the settings of
// Qwen2.5, Llama 3 and GPT-2 style files. Keep the two in step.

var llamaAdded = []string{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}

var (
	variantOnce sync.Once
	variantToks map[string]*Tokenizer
	variantErr  error
)

func variants(t testing.TB) map[string]*Tokenizer {
	t.Helper()
	variantOnce.Do(func() { variantToks, variantErr = buildVariants(t) })
	if variantErr != nil {
		t.Fatal(variantErr)
	}
	return variantToks
}

func buildVariants(t testing.TB) (map[string]*Tokenizer, error) {
	base := readGz(t, filepath.Join(testdata, "qwen3/tokenizer.json.gz"))
	var top map[string]json.RawMessage
	if err := json.Unmarshal(base, &top); err != nil {
		return nil, err
	}
	var model map[string]json.RawMessage
	if err := json.Unmarshal(top["model"], &model); err != nil {
		return nil, err
	}
	var added []map[string]any
	if err := json.Unmarshal(top["added_tokens"], &added); err != nil {
		return nil, err
	}
	build := func(edit func(top, model map[string]json.RawMessage)) (*Tokenizer, error) {
		return FromJSON(editJSON(top, model, edit), nil)
	}
	out := map[string]*Tokenizer{"qwen3": qwen3(t)}
	var err error

	out["qwen25"], err = build(func(top, model map[string]json.RawMessage) {
		var keep []map[string]any
		for _, a := range added {
			if a["id"].(float64) < 151665 {
				keep = append(keep, a)
			}
		}
		top["added_tokens"] = mustRaw(keep)
		var pairs [][2]string
		if err := json.Unmarshal(model["merges"], &pairs); err != nil {
			panic(err)
		}
		strs := make([]string, len(pairs))
		for i, p := range pairs {
			strs[i] = p[0] + " " + p[1]
		}
		model["merges"] = mustRaw(strs)
	})
	if err != nil {
		return nil, fmt.Errorf("qwen25: %v", err)
	}

	out["llama3"], err = build(func(top, model map[string]json.RawMessage) {
		top["pre_tokenizer"] = mustRaw(map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": llama3Pattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}})
		model["ignore_merges"] = mustRaw(true)
		var toks []map[string]any
		for i, c := range llamaAdded {
			toks = append(toks, map[string]any{"id": 151643 + i, "content": c, "special": true})
		}
		top["added_tokens"] = mustRaw(toks)
		top["post_processor"] = mustRaw(map[string]any{"type": "Sequence", "processors": []any{
			map[string]any{"type": "ByteLevel"},
			map[string]any{"type": "TemplateProcessing",
				"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<|begin_of_text|>"}}, map[string]any{"Sequence": map[string]any{"id": "A"}}},
				"special_tokens": map[string]any{"<|begin_of_text|>": map[string]any{"ids": []int{151643}}}},
		}})
	})
	if err != nil {
		return nil, fmt.Errorf("llama3: %v", err)
	}

	out["gpt2"], err = build(func(top, model map[string]json.RawMessage) {
		top["normalizer"] = json.RawMessage("null")
		top["pre_tokenizer"] = mustRaw(map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})
	})
	if err != nil {
		return nil, fmt.Errorf("gpt2: %v", err)
	}
	return out, nil
}

func mustRaw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// editJSON returns tokenizer.json with edits applied to copies of its top
// level and its model object.
func editJSON(top, model map[string]json.RawMessage, edit func(top, model map[string]json.RawMessage)) []byte {
	tp, md := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for k, v := range top {
		tp[k] = v
	}
	for k, v := range model {
		md[k] = v
	}
	edit(tp, md)
	tp["model"] = mustRaw(md)
	return mustRaw(tp)
}
