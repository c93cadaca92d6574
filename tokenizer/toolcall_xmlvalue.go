package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
)

// An XML tool call's values are text; the tool's JSON Schema says what
// each one is. The rules are vLLM's qwen3_coder parser's (the parser
// Qwen3.5's model cards name), so a rollout reads a call as a vLLM server
// would:
//
//   - a parameter the schema does not list, or one whose type is a
//     string type (string, str, text, varchar, char, enum) or not given,
//     is the raw text;
//   - "null" or "none" (any case) is null, for every other type and for a
//     string type that admits null (anyOf with {"type": "null"});
//   - int…, uint…, long…, short…, unsigned…: an integer, else the text;
//   - num…, float…: a number, written as an integer when it is whole;
//   - boolean, bool, binary: true when the text is "true" in any case,
//     false otherwise;
//   - anything else (object, array, dict…, list…): the text as JSON, else
//     the text.
//
// Where this differs from vLLM, on purpose: a "type" list such as
// ["integer", "null"] is its first non-null type (vLLM compares the list's
// Python repr and falls through to literal_eval); values vLLM would read
// with Python's ast.literal_eval (single-quoted strings, True, None inside
// containers) stay text; inf and nan stay text (vLLM fails on inf and
// writes no valid JSON for either).

// toolProperties maps each tool's name to its parameters' schemas, from
// OpenAI tool definitions ({"type": "function", "function": {...}} or the
// function object alone). Malformed definitions contribute nothing.
func toolProperties(tools []json.RawMessage) map[string]map[string]json.RawMessage {
	out := map[string]map[string]json.RawMessage{}
	for _, raw := range tools {
		var fn struct {
			Name       string `json:"name"`
			Parameters struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"parameters"`
		}
		var wrapped struct {
			Function *json.RawMessage `json:"function"`
		}
		if json.Unmarshal(raw, &wrapped) == nil && wrapped.Function != nil {
			raw = *wrapped.Function
		}
		if json.Unmarshal(raw, &fn) == nil && fn.Name != "" {
			if _, seen := out[fn.Name]; !seen {
				out[fn.Name] = fn.Parameters.Properties
			}
		}
	}
	return out
}

// paramType is a property's type, lower-cased, and whether null is
// allowed; a property with neither "type" nor "anyOf" is a string.
func paramType(schema json.RawMessage) (typ string, nullable bool) {
	var s struct {
		Type  json.RawMessage `json:"type"`
		AnyOf []struct {
			Type json.RawMessage `json:"type"`
		} `json:"anyOf"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return "string", false
	}
	var types []string
	if len(s.Type) > 0 {
		types = typeNames(s.Type)
	} else {
		for _, o := range s.AnyOf {
			types = append(types, typeNames(o.Type)...)
		}
	}
	typ = ""
	for _, t := range types {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "null" {
			nullable = true
		} else if typ == "" {
			typ = t
		}
	}
	switch {
	case typ == "" && nullable && len(s.Type) > 0:
		return "null", true // {"type": "null"}: only "null"/"none" mean anything
	case typ == "":
		return "string", nullable
	}
	return typ, nullable
}

func typeNames(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	json.Unmarshal(raw, &many)
	return many
}

// typedValue turns a parameter's text into JSON per its schema (nil:
// not in the schema).
func typedValue(text string, schema json.RawMessage) string {
	var b strings.Builder
	if schema == nil {
		writePyString(&b, text)
		return b.String()
	}
	typ, nullable := paramType(schema)
	isNull := strings.EqualFold(text, "null") || strings.EqualFold(text, "none")
	switch {
	case nullable && isNull:
		return "null"
	case typ == "string" || typ == "str" || typ == "text" || typ == "varchar" || typ == "char" || typ == "enum":
		writePyString(&b, text)
		return b.String()
	case isNull:
		return "null"
	case hasAnyPrefix(typ, "int", "uint", "long", "short", "unsigned"):
		if n, ok := pyInt(text); ok {
			return n
		}
	case hasAnyPrefix(typ, "num", "float"):
		if n, ok := pyNumber(text); ok {
			return n
		}
	case typ == "boolean" || typ == "bool" || typ == "binary":
		return strconv.FormatBool(strings.ToLower(text) == "true")
	default:
		if v, err := pyJSON([]byte(text)); err == nil {
			return v
		}
	}
	writePyString(&b, text)
	return b.String()
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// pyInt is Python's int(text) written back as JSON: surrounding space
// and a sign allowed, any size (digit-separating underscores, which
// Python also takes, are not).
func pyInt(text string) (string, bool) {
	n, ok := new(big.Int).SetString(strings.TrimFunc(text, unicode.IsSpace), 10)
	if !ok {
		return "", false
	}
	return n.String(), true
}

// pyNumber is Python's float(text), written as json.dumps writes it, or as
// an integer when it is whole (vLLM's rule).
func pyNumber(text string) (string, bool) {
	s := strings.TrimFunc(text, unicode.IsSpace)
	if strings.ContainsAny(s, "xX") { // hexadecimal: Go reads it, Python does not
		return "", false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", false
	}
	if f == math.Trunc(f) {
		n, _ := big.NewFloat(f).Int(nil)
		return n.String(), true
	}
	return pyFloat(f), true
}

// pyJSON re-encodes JSON text as Python's json.dumps(json.loads(text),
// ensure_ascii=False) does: ", " and ": " separators, keys in their order
// with a repeated key keeping its first place and last value, integers
// exact, other numbers as float repr.
func pyJSON(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var b strings.Builder
	if err := transcode(dec, &b); err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", errTrailing
	}
	return b.String(), nil
}

var errTrailing = errors.New("not a single JSON value")

func transcode(dec *json.Decoder, b *strings.Builder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '[' {
			b.WriteByte('[')
			for n := 0; dec.More(); n++ {
				if n > 0 {
					b.WriteString(", ")
				}
				if err := transcode(dec, b); err != nil {
					return err
				}
			}
			b.WriteByte(']')
			_, err := dec.Token()
			return err
		}
		obj := newArgObject()
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			var v strings.Builder
			if err := transcode(dec, &v); err != nil {
				return err
			}
			obj.set(k.(string), v.String())
		}
		b.Write(obj.json())
		_, err := dec.Token()
		return err
	case json.Number:
		s := tok.String()
		if !strings.ContainsAny(s, ".eE") {
			n, _ := pyInt(s) // "-0" is 0 to Python
			b.WriteString(n)
			return nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return errTrailing // Python would write Infinity, which is not JSON
		}
		b.WriteString(pyFloat(f))
	case string:
		writePyString(b, tok)
	case bool:
		b.WriteString(strconv.FormatBool(tok))
	case nil:
		b.WriteString("null")
	}
	return nil
}

// argObject is a JSON object under construction, in Python dict order.
type argObject struct {
	keys []string
	vals map[string]string // key → JSON text
}

func newArgObject() *argObject { return &argObject{vals: map[string]string{}} }

func (o *argObject) set(k, v string) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *argObject) json() json.RawMessage {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		writePyString(&b, k)
		b.WriteString(": ")
		b.WriteString(o.vals[k])
	}
	b.WriteByte('}')
	return json.RawMessage(b.String())
}
