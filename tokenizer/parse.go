package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// The subset of tokenizer.json that byte-level BPE tokenizers use.
type fileJSON struct {
	AddedTokens   []addedJSON     `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         *modelJSON      `json:"model"`
}

type addedJSON struct {
	ID         *int32 `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type modelJSON struct {
	Type                    string           `json:"type"`
	Vocab                   map[string]int32 `json:"vocab"`
	Merges                  json.RawMessage  `json:"merges"`
	Dropout                 *float64         `json:"dropout"`
	ContinuingSubwordPrefix string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         string           `json:"end_of_word_suffix"`
	ByteFallback            bool             `json:"byte_fallback"`
	IgnoreMerges            bool             `json:"ignore_merges"`
}

// component is the common shape of normalizers, pre-tokenizers,
// post-processors and decoders: a "type" plus type-specific fields.
type component struct {
	Type           string            `json:"type"`
	Normalizers    []json.RawMessage `json:"normalizers"`
	Pretokenizers  []json.RawMessage `json:"pretokenizers"`
	Processors     []json.RawMessage `json:"processors"`
	Decoders       []json.RawMessage `json:"decoders"`
	Pattern        *patternJSON      `json:"pattern"`
	Behavior       string            `json:"behavior"`
	Invert         bool              `json:"invert"`
	AddPrefixSpace bool              `json:"add_prefix_space"`
	UseRegex       *bool             `json:"use_regex"`
	Single         []templatePiece   `json:"single"`
	SpecialTokens  map[string]struct {
		IDs []int32 `json:"ids"`
	} `json:"special_tokens"`
}

type patternJSON struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

type templatePiece struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// jsonError turns a decoding error into one line naming the file and, for
// syntax errors, the line and column.
func jsonError(name string, data []byte, err error) error {
	if se, ok := err.(*json.SyntaxError); ok {
		line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
		col := int(se.Offset) - bytes.LastIndexByte(data[:se.Offset], '\n') - 1
		return fmt.Errorf("%s: malformed JSON at line %d, column %d: %v", name, line, col, err)
	}
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		if te.Field == "" {
			// encoding/json would name the Go type it decodes into.
			return fmt.Errorf("%s: must be one JSON object ({...}), got a JSON %s", name, te.Value)
		}
		return fmt.Errorf("%s: key %q has a %s where a %s is expected", name, te.Field, te.Value, te.Type)
	}
	return fmt.Errorf("%s: malformed JSON: %v", name, err)
}

// parseTokenizerJSON builds a Tokenizer from tokenizer.json's bytes; name is
// used in error messages.
func parseTokenizerJSON(name string, data []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, jsonError(name, data, err)
	}
	if f.Model == nil {
		return nil, fmt.Errorf("%s: no \"model\" object; is this a Hugging Face tokenizer.json?", name)
	}
	t := &Tokenizer{addedByID: map[int32]*addedToken{}}
	var err error
	if t.model, err = parseBPE(name, f.Model); err != nil {
		return nil, err
	}
	if t.normalizer, err = parseNormalizer(name, f.Normalizer); err != nil {
		return nil, err
	}
	if t.splitters, err = parsePreTokenizer(name, f.PreTokenizer); err != nil {
		return nil, err
	}
	if err = checkDecoder(name, f.Decoder); err != nil {
		return nil, err
	}
	if err = t.buildVocab(name, f.AddedTokens); err != nil {
		return nil, err
	}
	if t.prefix, t.suffix, err = parsePostProcessor(name, f.PostProcessor); err != nil {
		return nil, err
	}
	return t, nil
}

func parseBPE(name string, m *modelJSON) (*bpe, error) {
	switch {
	case m.Type == "BPE":
	case m.Type == "" && m.Merges != nil:
		// Old files omit the type; vocab + merges can only be BPE.
	default:
		return nil, fmt.Errorf("%s: model.type %q is not supported; grpo reads byte-level BPE tokenizers (type \"BPE\", as Qwen and Llama 3 use)", name, m.Type)
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return nil, fmt.Errorf("%s: model.dropout is %v; BPE dropout makes encoding random, set it to null", name, *m.Dropout)
	}
	if m.ContinuingSubwordPrefix != "" || m.EndOfWordSuffix != "" {
		return nil, fmt.Errorf("%s: model.continuing_subword_prefix/end_of_word_suffix are set; byte-level BPE tokenizers do not use them", name)
	}
	if m.ByteFallback {
		return nil, fmt.Errorf("%s: model.byte_fallback is true, which is a SentencePiece-style BPE; grpo reads byte-level BPE tokenizers", name)
	}
	if len(m.Vocab) == 0 {
		return nil, fmt.Errorf("%s: model.vocab is missing or empty", name)
	}
	b := &bpe{ids: make(map[string]int32, len(m.Vocab)), ignoreMerges: m.IgnoreMerges, cache: map[string][]int32{}}
	for tok, id := range m.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("%s: model.vocab[%q] is %d; ids must be >= 0", name, tok, id)
		}
		raw, ok := byteLevelDecode(tok)
		if !ok {
			return nil, fmt.Errorf("%s: model.vocab entry %q has characters outside the byte-level alphabet; this is not a byte-level BPE vocabulary", name, tok)
		}
		b.ids[raw] = id
	}
	for c := 0; c < 256; c++ {
		id, ok := b.ids[string([]byte{byte(c)})]
		if !ok {
			return nil, fmt.Errorf("%s: model.vocab lacks the byte token %q (byte 0x%02x); a byte-level vocabulary needs all 256", name, string(byteToRune[c]), c)
		}
		b.byteID[c] = id
	}
	pairs, err := parseMerges(name, m.Merges)
	if err != nil {
		return nil, err
	}
	b.merges = make(map[uint64]merge, len(pairs))
	for rank, p := range pairs {
		var ids [3]int32
		for k, tok := range []string{p[0], p[1], p[0] + p[1]} {
			raw, isByteLevel := byteLevelDecode(tok)
			id, ok := b.ids[raw]
			if !ok || !isByteLevel {
				return nil, fmt.Errorf("%s: model.merges[%d] %q: token %q is not in model.vocab", name, rank, p[0]+" "+p[1], tok)
			}
			ids[k] = id
		}
		b.merges[pairKey(ids[0], ids[1])] = merge{rank: int32(rank), id: ids[2]}
	}
	return b, nil
}

// parseMerges accepts both serializations: "a b" strings (tokenizers <
// 0.20) and ["a", "b"] pairs.
func parseMerges(name string, raw json.RawMessage) ([][2]string, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("%s: model.merges is missing", name)
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		return pairs, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err != nil {
		return nil, fmt.Errorf("%s: model.merges must be a list of \"a b\" strings or [\"a\", \"b\"] pairs", name)
	}
	pairs = make([][2]string, len(strs))
	for i, s := range strs {
		a, b, ok := strings.Cut(s, " ")
		if !ok {
			return nil, fmt.Errorf("%s: model.merges[%d] is %q; expected two tokens separated by a space", name, i, s)
		}
		pairs[i] = [2]string{a, b}
	}
	return pairs, nil
}

func parseNormalizer(name string, raw json.RawMessage) ([]norm.Form, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: normalizer: %v", name, err)
	}
	switch c.Type {
	case "NFC":
		return []norm.Form{norm.NFC}, nil
	case "NFD":
		return []norm.Form{norm.NFD}, nil
	case "NFKC":
		return []norm.Form{norm.NFKC}, nil
	case "NFKD":
		return []norm.Form{norm.NFKD}, nil
	case "Sequence":
		var forms []norm.Form
		for _, sub := range c.Normalizers {
			f, err := parseNormalizer(name, sub)
			if err != nil {
				return nil, err
			}
			forms = append(forms, f...)
		}
		return forms, nil
	}
	return nil, fmt.Errorf("%s: normalizer.type %q is not supported (supported: NFC, NFD, NFKC, NFKD, Sequence)", name, c.Type)
}

// parsePreTokenizer returns the splitting stages. The pipeline must end in
// ByteLevel, because the model works on bytes.
func parsePreTokenizer(name string, raw json.RawMessage) ([]splitter, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("%s: pre_tokenizer is null; grpo reads byte-level tokenizers, whose pre_tokenizer ends in ByteLevel", name)
	}
	var stages []splitter
	sawByteLevel := false
	var walk func(raw json.RawMessage) error
	walk = func(raw json.RawMessage) error {
		var c component
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("%s: pre_tokenizer: %v", name, err)
		}
		if sawByteLevel {
			return fmt.Errorf("%s: pre_tokenizer: %q after ByteLevel is not supported", name, c.Type)
		}
		switch c.Type {
		case "Sequence":
			for _, sub := range c.Pretokenizers {
				if err := walk(sub); err != nil {
					return err
				}
			}
		case "Split":
			sp, err := parseSplit(name, &c)
			if err != nil {
				return err
			}
			stages = append(stages, sp)
		case "ByteLevel":
			if c.AddPrefixSpace {
				return fmt.Errorf("%s: pre_tokenizer ByteLevel add_prefix_space=true is not supported (Qwen and Llama 3 use false)", name)
			}
			if c.UseRegex == nil || *c.UseRegex {
				sp, err := newSplitter(gpt2Pattern)
				if err != nil {
					return err
				}
				stages = append(stages, sp)
			}
			sawByteLevel = true
		default:
			return fmt.Errorf("%s: pre_tokenizer.type %q is not supported (supported: Sequence, Split, ByteLevel)", name, c.Type)
		}
		return nil
	}
	if err := walk(raw); err != nil {
		return nil, err
	}
	if !sawByteLevel {
		return nil, fmt.Errorf("%s: pre_tokenizer has no ByteLevel stage; grpo reads byte-level BPE tokenizers only", name)
	}
	return stages, nil
}

func parseSplit(name string, c *component) (splitter, error) {
	if c.Behavior != "Isolated" || c.Invert {
		return nil, fmt.Errorf("%s: pre_tokenizer Split with behavior %q, invert %v is not supported (only \"Isolated\", invert false)", name, c.Behavior, c.Invert)
	}
	switch {
	case c.Pattern != nil && c.Pattern.Regex != nil:
		sp, err := newSplitter(*c.Pattern.Regex)
		if err != nil {
			return nil, fmt.Errorf("%s: pre_tokenizer Split: %v", name, err)
		}
		return sp, nil
	case c.Pattern != nil && c.Pattern.String != nil && *c.Pattern.String != "":
		return newRegexSplitter(regexp2.Escape(*c.Pattern.String))
	}
	return nil, fmt.Errorf("%s: pre_tokenizer Split has no pattern (want {\"Regex\": ...} or {\"String\": ...})", name)
}

func checkDecoder(name string, raw json.RawMessage) error {
	var c component
	if !isNull(raw) {
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("%s: decoder: %v", name, err)
		}
	}
	if c.Type == "Sequence" && len(c.Decoders) == 1 {
		return checkDecoder(name, c.Decoders[0])
	}
	if c.Type != "ByteLevel" {
		return fmt.Errorf("%s: decoder.type %q is not supported; byte-level tokenizers use \"ByteLevel\"", name, c.Type)
	}
	return nil
}

// buildVocab lays out id → text for the model vocab and the added tokens.
func (t *Tokenizer) buildVocab(name string, added []addedJSON) error {
	maxID := int32(-1)
	for _, id := range t.model.ids {
		maxID = max(maxID, id)
	}
	var toks []*addedToken
	for i, a := range added {
		if a.ID == nil || *a.ID < 0 {
			return fmt.Errorf("%s: added_tokens[%d] (%q) has no valid \"id\"", name, i, a.Content)
		}
		if !validAddedContent(a.Content) {
			return fmt.Errorf("%s: added_tokens[%d] (id %d) has empty or invalid UTF-8 content", name, i, *a.ID)
		}
		if a.SingleWord {
			return fmt.Errorf("%s: added_tokens[%d] %q has single_word=true, which is not supported", name, i, a.Content)
		}
		if a.Normalized && len(t.normalizer) > 0 && !norm.NFC.IsNormalString(a.Content) {
			return fmt.Errorf("%s: added_tokens[%d] %q is normalized=true but changes under the normalizer, which is not supported", name, i, a.Content)
		}
		tok := &addedToken{id: *a.ID, content: a.Content, lstrip: a.LStrip, rstrip: a.RStrip, special: a.Special}
		toks = append(toks, tok)
		t.addedByID[tok.id] = tok
		maxID = max(maxID, tok.id)
	}
	if maxID > 1<<24 {
		return fmt.Errorf("%s: largest token id is %d; that is not a real vocabulary", name, maxID)
	}
	t.vocabSize = int(maxID) + 1
	t.vocab = make([]string, t.vocabSize)
	t.hasID = make([]bool, t.vocabSize)
	for raw, id := range t.model.ids {
		t.vocab[id], t.hasID[id] = raw, true
	}
	for _, a := range toks {
		t.vocab[a.id], t.hasID[a.id] = a.content, true
	}
	t.added = newAddedMatcher(toks)
	return nil
}

var templateSeqID = regexp.MustCompile(`^[AB]$`)

// parsePostProcessor returns the ids put before and after a single
// sequence. ByteLevel adds nothing; TemplateProcessing lists them.
func parsePostProcessor(name string, raw json.RawMessage) (prefix, suffix []int32, err error) {
	if isNull(raw) {
		return nil, nil, nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, nil, fmt.Errorf("%s: post_processor: %v", name, err)
	}
	switch c.Type {
	case "ByteLevel":
		return nil, nil, nil
	case "Sequence":
		for _, sub := range c.Processors {
			p, s, err := parsePostProcessor(name, sub)
			if err != nil {
				return nil, nil, err
			}
			// Each later processor wraps the output of the earlier ones.
			prefix, suffix = append(p, prefix...), append(suffix, s...)
		}
		return prefix, suffix, nil
	case "TemplateProcessing":
		seen := false
		for i, piece := range c.Single {
			switch {
			case piece.Sequence != nil && templateSeqID.MatchString(piece.Sequence.ID):
				seen = true
			case piece.SpecialToken != nil:
				st, ok := c.SpecialTokens[piece.SpecialToken.ID]
				if !ok {
					return nil, nil, fmt.Errorf("%s: post_processor.single[%d] names %q, which is not in post_processor.special_tokens", name, i, piece.SpecialToken.ID)
				}
				if seen {
					suffix = append(suffix, st.IDs...)
				} else {
					prefix = append(prefix, st.IDs...)
				}
			default:
				return nil, nil, fmt.Errorf("%s: post_processor.single[%d] is neither a SpecialToken nor a Sequence", name, i)
			}
		}
		return prefix, suffix, nil
	}
	return nil, nil, fmt.Errorf("%s: post_processor.type %q is not supported (supported: ByteLevel, TemplateProcessing, Sequence)", name, c.Type)
}
