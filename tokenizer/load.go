package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Load reads tokenizer.json and tokenizer_config.json from a model
// directory, chat_template.jinja when present (it replaces the config's
// chat_template, as in transformers: Qwen3.5 ships its template only
// there), and generation_config.json when present (for extra stop ids).
func Load(dir string) (*Tokenizer, error) {
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	if _, err := os.Stat(cfgPath); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: missing; a Hugging Face model directory holds tokenizer.json and tokenizer_config.json", cfgPath)
	}
	t, err := LoadFiles(filepath.Join(dir, "tokenizer.json"), cfgPath)
	if err != nil {
		return nil, err
	}
	if err := t.readChatTemplateFile(filepath.Join(dir, "chat_template.jinja")); err != nil {
		return nil, err
	}
	genPath := filepath.Join(dir, "generation_config.json")
	if data, err := os.ReadFile(genPath); err == nil {
		if err := t.addGenerationConfig(genPath, data); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// LoadFiles reads a tokenizer.json and (unless configPath is "") a
// tokenizer_config.json. Either may be gzip-compressed (name ending in .gz).
func LoadFiles(tokenizerPath, configPath string) (*Tokenizer, error) {
	tokData, err := readMaybeGzip(tokenizerPath)
	if err != nil {
		return nil, err
	}
	var cfgData []byte
	if configPath != "" {
		if cfgData, err = readMaybeGzip(configPath); err != nil {
			return nil, err
		}
	}
	t, err := fromJSON(filepath.Base(tokenizerPath), tokData, filepath.Base(configPath), cfgData)
	if err != nil {
		return nil, err
	}
	// Template errors name the file the template came from: a model
	// directory may hold any downloaded template.
	t.cfg.templateSource = configPath
	return t, nil
}

// FromJSON builds a tokenizer from the contents of tokenizer.json and
// tokenizer_config.json (config may be nil: no eos, pad or chat template).
func FromJSON(tokenizerJSON, configJSON []byte) (*Tokenizer, error) {
	return fromJSON("tokenizer.json", tokenizerJSON, "tokenizer_config.json", configJSON)
}

func fromJSON(tokName string, tokData []byte, cfgName string, cfgData []byte) (*Tokenizer, error) {
	t, err := parseTokenizerJSON(tokName, tokData)
	if err != nil {
		return nil, err
	}
	t.cfg.addBOS = len(t.prefix) > 0
	if cfgData != nil {
		if err := t.parseConfig(cfgName, cfgData); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func readMaybeGzip(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: file not found", path)
	}
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: not a gzip file: %v", path, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: corrupt gzip data: %v", path, err)
	}
	return out, nil
}

// parseConfig reads the parts of tokenizer_config.json the trainer needs.
func (t *Tokenizer) parseConfig(name string, data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return jsonError(name, data, err)
	}
	tokenField := func(key string) (string, error) {
		v, ok := raw[key]
		if !ok || isNull(v) {
			return "", nil
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s, nil
		}
		var obj struct {
			Content string `json:"content"`
		}
		if json.Unmarshal(v, &obj) == nil && obj.Content != "" {
			return obj.Content, nil
		}
		return "", fmt.Errorf("%s: %q must be a token string or an object with \"content\", got %s", name, key, v)
	}
	lookup := func(key string) (int32, bool, error) {
		s, err := tokenField(key)
		if err != nil || s == "" {
			return 0, false, err
		}
		id, ok := t.TokenID(s)
		if !ok {
			return 0, false, fmt.Errorf("%s: %s %q is not a token of tokenizer.json", name, key, s)
		}
		return id, true, nil
	}
	eos, hasEOS, err := lookup("eos_token")
	if err != nil {
		return err
	}
	if hasEOS {
		t.cfg.eos = []int32{eos}
		t.cfg.eosToken, _ = tokenField("eos_token")
	}
	if t.cfg.bos, t.cfg.hasBOS, err = lookup("bos_token"); err != nil {
		return err
	}
	t.cfg.bosToken, _ = tokenField("bos_token")
	if t.cfg.pad, t.cfg.hasPad, err = lookup("pad_token"); err != nil {
		return err
	}
	// add_bos_token is not read: HF fast tokenizers take what they add
	// around a text from tokenizer.json's post_processor, and so do we.
	return t.parseChatTemplate(name, raw["chat_template"])
}

func (t *Tokenizer) parseChatTemplate(name string, v json.RawMessage) error {
	if isNull(v) {
		return nil
	}
	if json.Unmarshal(v, &t.cfg.chatTemplate) == nil {
		return nil
	}
	var named []struct {
		Name     string  `json:"name"`
		Template *string `json:"template"`
	}
	if err := json.Unmarshal(v, &named); err != nil {
		return fmt.Errorf("%s: \"chat_template\" must be a string or a list of {\"name\", \"template\"}", name)
	}
	t.cfg.templates = map[string]string{}
	for i, n := range named {
		// transformers fails on such an entry too (KeyError); read as
		// "no template" it would hide the fault behind another message.
		if n.Name == "" {
			return fmt.Errorf("%s: chat_template[%d] has no \"name\"; each entry of the list is {\"name\": \"default\", \"template\": \"<jinja>\"}", name, i)
		}
		if n.Template == nil {
			return fmt.Errorf("%s: chat_template[%d] (%q) has no \"template\"; each entry of the list is {\"name\": %q, \"template\": \"<jinja>\"}", name, i, n.Name, n.Name)
		}
		t.cfg.templates[n.Name] = *n.Template
	}
	t.cfg.chatTemplate = t.cfg.templates["default"]
	return nil
}

// addGenerationConfig appends generation_config.json's eos_token_id (a
// number or a list) to the stop ids.
func (t *Tokenizer) addGenerationConfig(name string, data []byte) error {
	var g struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		return jsonError(name, data, err)
	}
	if isNull(g.EOS) {
		return nil
	}
	var ids []int32
	var one int32
	if json.Unmarshal(g.EOS, &one) == nil {
		ids = []int32{one}
	} else if err := json.Unmarshal(g.EOS, &ids); err != nil {
		return fmt.Errorf("%s: \"eos_token_id\" must be an id or a list of ids, got %s", name, g.EOS)
	}
	for _, id := range ids {
		if _, ok := t.Token(id); !ok {
			return fmt.Errorf("%s: eos_token_id %d is not a token id (vocab size %d)", name, id, t.vocabSize)
		}
		dup := false
		for _, e := range t.cfg.eos {
			dup = dup || e == id
		}
		if !dup {
			t.cfg.eos = append(t.cfg.eos, id)
		}
	}
	return nil
}

// readChatTemplateFile makes a chat_template.jinja beside the config the
// template, when there is one. transformers reads it in place of the
// config's chat_template whatever the config holds, so a named list there
// is dropped too.
func (t *Tokenizer) readChatTemplateFile(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !utf8.Valid(data) {
		return fmt.Errorf("%s: not UTF-8 text; a chat template is a Jinja text file", path)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%s: empty; remove it to use tokenizer_config.json's chat_template", path)
	}
	t.cfg.chatTemplate, t.cfg.templates, t.cfg.templateSource = string(data), nil, path
	return nil
}
