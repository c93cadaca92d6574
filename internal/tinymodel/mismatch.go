package tinymodel

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// WriteVocabMismatch is Write with one more added token in the tokenizer,
// at the id just past the model's vocab_size: a tokenizer and a model that
// do not belong together, which every command must refuse before use.
func WriteVocabMismatch(dir, src string) error {
	if err := Write(dir, src); err != nil {
		return err
	}
	var cfg struct {
		VocabSize int `json:"vocab_size"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return err
	}
	path := filepath.Join(dir, "tokenizer.json")
	if data, err = os.ReadFile(path); err != nil {
		return err
	}
	var tok map[string]any
	if err := json.Unmarshal(data, &tok); err != nil {
		return err
	}
	tok["added_tokens"] = append(tok["added_tokens"].([]any), map[string]any{"id": cfg.VocabSize, "content": "<|beyond|>",
		"single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
	if data, err = json.MarshalIndent(tok, "", "  "); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
