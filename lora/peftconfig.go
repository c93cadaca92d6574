package lora

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// The file names of a PEFT adapter directory.
const (
	ConfigFileName  = "adapter_config.json"
	WeightsFileName = "adapter_model.safetensors"
)

// peftConfig is what grpo takes from a PEFT adapter_config.json.
type peftConfig struct {
	rank      int
	alpha     float64
	rsLoRA    bool
	dropout   float64
	baseModel string
	// targets is nil when target_modules is null: the tensors then say
	// which modules are adapted.
	targets, exclude *moduleMatcher
	rankPattern      []pattern
	alphaPattern     []pattern
	// targetParams is target_parameters: names (or suffixes) of the fused
	// experts' Parameters adapted (experts_fused.go); nil for none.
	targetParams []string
}

// pattern is one rank_pattern / alpha_pattern entry, in file order.
type pattern struct {
	key   string
	re    *regexp.Regexp
	value float64
}

// moduleMatcher selects modules by their name in the base model
// ("model.layers.3.mlp.down_proj") the way PEFT's target_modules does: a
// list matches a module whose name equals an entry or ends in "."+entry; a
// string is a regular expression that must match the whole name, except
// "all-linear" (every linear layer but the output head) and, as a
// convenience PEFT lacks, a bare module name such as "q_proj".
type moduleMatcher struct {
	all   bool
	names []string
	re    *regexp.Regexp
	text  string // for messages
}

func (mm *moduleMatcher) match(name string) bool {
	if mm == nil {
		return false
	}
	if mm.all {
		return true
	}
	if mm.re != nil {
		return mm.re.MatchString(name)
	}
	for _, n := range mm.names {
		if name == n || strings.HasSuffix(name, "."+n) {
			return true
		}
	}
	return false
}

var bareName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// parseModules reads target_modules or exclude_modules; nil for null.
func parseModules(key string, raw json.RawMessage) (*moduleMatcher, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch {
		case s == "all-linear":
			return &moduleMatcher{all: true, text: `"all-linear"`}, nil
		case bareName.MatchString(s):
			return &moduleMatcher{names: []string{s}, text: fmt.Sprintf("%q", s)}, nil
		}
		re, err := regexp.Compile(`^(?:` + s + `)$`)
		if err != nil {
			return nil, fmt.Errorf("%s %q is a regular expression Go's regexp cannot compile (%v); list the module names instead, e.g. [\"q_proj\", \"v_proj\"]", key, s, err)
		}
		return &moduleMatcher{re: re, text: fmt.Sprintf("%q", s)}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s must be a list of module names or a string, got %s", key, abbrev(raw))
	}
	return &moduleMatcher{names: list, text: abbrev(raw)}, nil
}

// parsePatterns reads rank_pattern or alpha_pattern, keeping file order
// (PEFT uses the first matching key).
func parsePatterns(key string, raw json.RawMessage, integer bool) ([]pattern, error) {
	if isNull(raw) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("%s must be an object mapping module names to numbers, got %s", key, abbrev(raw))
	}
	var out []pattern
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: %v", key, err)
		}
		name, _ := t.(string)
		var num json.Number
		if err := dec.Decode(&num); err != nil {
			return nil, fmt.Errorf("%s[%q] must be a number: %v", key, name, err)
		}
		v, err := num.Float64()
		if err != nil || !(v > 0) || math.IsInf(v, 0) || integer && (v != math.Trunc(v) || v > 1<<20) {
			want := "a positive number"
			if integer {
				want = "a positive integer rank"
			}
			return nil, fmt.Errorf("%s[%q] = %s: want %s", key, name, num, want)
		}
		// PEFT matches a pattern key as a suffix of the module name at a
		// dot boundary, the key itself being a regular expression.
		re, err := regexp.Compile(`^(?:.*\.)?(?:` + name + `)$`)
		if err != nil {
			return nil, fmt.Errorf("%s key %q is a regular expression Go's regexp cannot compile (%v); use full module names such as \"model.layers.0.self_attn.q_proj\"", key, name, err)
		}
		out = append(out, pattern{key: name, re: re, value: v})
	}
	return out, nil
}

// lookup returns the value of the first pattern that matches module
// exactly, else of the first that matches it as a regular expression.
func lookup(ps []pattern, module string) (float64, bool) {
	for _, p := range ps {
		if p.key == module {
			return p.value, true
		}
	}
	for _, p := range ps {
		if p.re.MatchString(module) {
			return p.value, true
		}
	}
	return 0, false
}

// parsePEFTConfig reads adapter_config.json. Keys grpo does not need
// (inference_mode, revision, init options, …) are ignored, as PEFT's own
// loader ignores keys newer versions add; options that would change the
// computation and that grpo does not implement are errors.
func parsePEFTConfig(data []byte) (*peftConfig, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if raw == nil {
		return nil, fmt.Errorf("want a JSON object, got %s", abbrev(data))
	}
	pc := &peftConfig{rank: 8, alpha: 8} // PEFT's LoraConfig defaults
	var peftType string
	if err := getString(raw, "peft_type", &peftType); err != nil {
		return nil, err
	}
	if peftType != "LORA" {
		if peftType == "" {
			return nil, fmt.Errorf("peft_type is missing; a LoRA adapter has \"peft_type\": \"LORA\"")
		}
		return nil, fmt.Errorf("peft_type %q is not supported; only LoRA adapters (\"LORA\") are", peftType)
	}
	var task string
	if err := getString(raw, "task_type", &task); err != nil {
		return nil, err
	}
	if task != "" && task != "CAUSAL_LM" {
		return nil, fmt.Errorf("task_type %q is not supported; grpo loads causal-LM adapters (\"CAUSAL_LM\")", task)
	}
	if v, ok := raw["r"]; ok {
		var r float64
		if json.Unmarshal(v, &r) != nil || r != math.Trunc(r) || r < 1 || r > 1<<20 {
			return nil, fmt.Errorf("r = %s: the rank must be a positive integer", abbrev(v))
		}
		pc.rank = int(r)
	}
	if v, ok := raw["lora_alpha"]; ok {
		if json.Unmarshal(v, &pc.alpha) != nil || !(pc.alpha > 0) || math.IsInf(pc.alpha, 0) {
			return nil, fmt.Errorf("lora_alpha = %s: alpha must be a positive number", abbrev(v))
		}
	}
	if v, ok := raw["lora_dropout"]; ok && !isNull(v) {
		if json.Unmarshal(v, &pc.dropout) != nil || !(pc.dropout >= 0 && pc.dropout <= 1) {
			return nil, fmt.Errorf("lora_dropout = %s: want a number in [0, 1]", abbrev(v))
		}
	}
	if err := getString(raw, "base_model_name_or_path", &pc.baseModel); err != nil {
		return nil, err
	}
	if err := getBool(raw, "use_rslora", &pc.rsLoRA); err != nil {
		return nil, err
	}
	if err := rejectUnsupported(raw); err != nil {
		return nil, err
	}
	var err error
	if pc.targets, err = parseModules("target_modules", raw["target_modules"]); err != nil {
		return nil, err
	}
	if pc.exclude, err = parseModules("exclude_modules", raw["exclude_modules"]); err != nil {
		return nil, err
	}
	if v, ok := raw["target_parameters"]; ok && !isNull(v) {
		if json.Unmarshal(v, &pc.targetParams) != nil {
			return nil, fmt.Errorf("target_parameters must be a list of parameter names, got %s", abbrev(v))
		}
	}
	if pc.rankPattern, err = parsePatterns("rank_pattern", raw["rank_pattern"], true); err != nil {
		return nil, err
	}
	if pc.alphaPattern, err = parsePatterns("alpha_pattern", raw["alpha_pattern"], false); err != nil {
		return nil, err
	}
	return pc, nil
}

// rejectUnsupported turns every option that changes what the adapter
// computes, and that grpo does not implement, into an error naming it.
func rejectUnsupported(raw map[string]json.RawMessage) error {
	for _, f := range []struct{ key, what string }{
		{"use_dora", "DoRA (use_dora: true)"},
		{"fan_in_fan_out", "fan_in_fan_out: true (Conv1D/GPT-2 style weights)"},
		{"lora_bias", "lora_bias: true (a bias on lora_B)"},
		{"use_qalora", "QALoRA (use_qalora: true)"},
	} {
		var b bool
		if err := getBool(raw, f.key, &b); err != nil {
			return err
		}
		if b {
			return fmt.Errorf("%s is not supported; grpo loads plain LoRA adapters", f.what)
		}
	}
	var bias string
	if err := getString(raw, "bias", &bias); err != nil {
		return err
	}
	if bias != "" && bias != "none" {
		return fmt.Errorf("bias %q is not supported (the adapter trains base-model biases); only \"none\" is", bias)
	}
	for _, key := range []string{"modules_to_save", "layers_to_transform", "layer_replication", "trainable_token_indices"} {
		if v, ok := raw[key]; ok && !isEmpty(v) {
			return fmt.Errorf("%s = %s is not supported; grpo loads adapters whose %s is null", key, abbrev(v), key)
		}
	}
	return nil
}

func getString(raw map[string]json.RawMessage, key string, dst *string) error {
	v, ok := raw[key]
	if !ok || isNull(v) {
		return nil
	}
	if json.Unmarshal(v, dst) != nil {
		return fmt.Errorf("%s must be a string, got %s", key, abbrev(v))
	}
	return nil
}

func getBool(raw map[string]json.RawMessage, key string, dst *bool) error {
	v, ok := raw[key]
	if !ok || isNull(v) {
		return nil
	}
	if json.Unmarshal(v, dst) != nil {
		return fmt.Errorf("%s must be true or false, got %s", key, abbrev(v))
	}
	return nil
}

func isNull(v json.RawMessage) bool {
	t := bytes.TrimSpace(v)
	return len(t) == 0 || string(t) == "null"
}

// isEmpty is true for null, [], {} and "".
func isEmpty(v json.RawMessage) bool {
	t := string(bytes.TrimSpace(v))
	if t == "null" || t == "" || t == `""` {
		return true
	}
	var x any
	if json.Unmarshal(v, &x) != nil {
		return false
	}
	switch x := x.(type) {
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// abbrev shows a JSON value in an error message, cut to a readable length.
func abbrev(v []byte) string {
	var c bytes.Buffer
	s := string(bytes.TrimSpace(v))
	if json.Compact(&c, v) == nil {
		s = c.String()
	}
	s = strings.Join(strings.Fields(s), " ") // one line, whatever the input
	if r := []rune(s); len(r) > 80 {
		s = string(r[:77]) + "..."
	}
	return s
}
