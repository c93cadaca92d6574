package env

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// paramSchema is the part of a tool's parameters JSON Schema that calls are
// checked against: the object's properties and their types, required keys,
// enums, array items, and whether other keys are allowed. Deeper keywords
// (patterns, ranges, combinators) are the tool's own business.
type paramSchema struct {
	Type                 typeList                `json:"type"`
	Properties           map[string]*paramSchema `json:"properties"`
	Required             []string                `json:"required"`
	AdditionalProperties *bool                   `json:"-"`
	Enum                 []json.RawMessage       `json:"enum"`
	Items                *paramSchema            `json:"items"`
}

func (p *paramSchema) UnmarshalJSON(b []byte) error {
	type plain paramSchema
	var aux struct {
		plain
		AdditionalProperties json.RawMessage `json:"additionalProperties"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*p = paramSchema(aux.plain)
	if string(aux.AdditionalProperties) == "false" {
		p.AdditionalProperties = new(bool)
	}
	return nil
}

// typeList is a schema's "type": one name or a list of them.
type typeList []string

func (t *typeList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*t = typeList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf(`"type" must be a type name or a list of them`)
	}
	*t = many
	return nil
}

func parseParams(raw json.RawMessage) (*paramSchema, error) {
	var p paramSchema
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if len(p.Type) > 0 && !slices.Contains(p.Type, "object") {
		return nil, fmt.Errorf("type is %v; a tool's parameters are an object", []string(p.Type))
	}
	return &p, nil
}

// CheckToolArgs checks a call's arguments against the tool's schema as a
// Python function would check its keyword arguments: an object, every
// required key present, each known key of its declared type (and among
// its enum), and no unknown key when the schema forbids others
// (additionalProperties false, as verifiers' generated schemas say). The
// error says what to fix, for the model to read.
func CheckToolArgs(spec ToolSpec, args json.RawMessage) error {
	p, err := parseParams(spec.Parameters)
	if err != nil {
		return fmt.Errorf("%s: its schema is unusable: %v", spec.Name, err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return fmt.Errorf("%s: the arguments must be a JSON object", spec.Name)
	}
	for _, r := range p.Required {
		if _, ok := obj[r]; !ok {
			return fmt.Errorf("%s: missing required argument %q", spec.Name, r)
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		prop, known := p.Properties[k]
		if !known {
			if p.AdditionalProperties != nil {
				return fmt.Errorf("%s: unexpected argument %q; it takes %s", spec.Name, k, propertyNames(p))
			}
			continue
		}
		if err := checkValue(prop, obj[k]); err != nil {
			return fmt.Errorf("%s: argument %q %v", spec.Name, k, err)
		}
	}
	return nil
}

func propertyNames(p *paramSchema) string {
	if len(p.Properties) == 0 {
		return "no arguments"
	}
	var names []string
	for n := range p.Properties {
		names = append(names, fmt.Sprintf("%q", n))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func checkValue(s *paramSchema, raw json.RawMessage) error {
	if s == nil {
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("is not valid JSON")
	}
	if len(s.Type) > 0 && !slices.ContainsFunc(s.Type, func(t string) bool { return hasType(v, t) }) {
		return fmt.Errorf("must be %s, not %s", strings.Join(s.Type, " or "), jsonTypeName(v))
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e json.RawMessage) bool { return sameJSON(e, raw) }) {
		var opts []string
		for _, e := range s.Enum {
			opts = append(opts, string(e))
		}
		return fmt.Errorf("must be one of %s", strings.Join(opts, ", "))
	}
	if items, ok := v.([]any); ok && s.Items != nil {
		var elems []json.RawMessage
		_ = json.Unmarshal(raw, &elems)
		for i := range items {
			if err := checkValue(s.Items, elems[i]); err != nil {
				return fmt.Errorf("item %d %v", i, err)
			}
		}
	}
	return nil
}

func hasType(v any, t string) bool {
	switch t {
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "null":
		return v == nil
	}
	return true // a type name JSON Schema lacks: not ours to refuse
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
