package tomlschema

import (
	"reflect"
	"strconv"
	"strings"
)

// Schema is the key tree of one root struct type, with the root's default
// value for the docs and for examples in error messages.
type Schema struct {
	root reflect.Type
	def  reflect.Value
}

// New reads the schema of def's type; def is the value a file starts from
// (the zero value when the format has no defaults).
func New(def any) *Schema {
	v := reflect.ValueOf(def)
	return &Schema{root: v.Type(), def: v}
}

// Fields lists a struct's keys with their types, flattening embedded
// structs the way go-toml does; each field's Name is its key.
func Fields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("toml")
		if f.Anonymous && tag == "" {
			out = append(out, Fields(f.Type)...)
			continue
		}
		if !f.IsExported() || tag == "-" || tag == "" {
			continue
		}
		f.Name = strings.Split(tag, ",")[0]
		out = append(out, f)
	}
	return out
}

// Type is the Go type a key path decodes into, or nil for a path outside
// the schema. Array indices in the path are skipped.
func (s *Schema) Type(path []string) reflect.Type {
	t := s.root
	for _, part := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Slice, reflect.Array:
			if _, err := strconv.Atoi(part); err == nil {
				t = t.Elem()
				continue
			}
			t = t.Elem()
			if t.Kind() != reflect.Struct {
				return nil
			}
			fallthrough
		case reflect.Struct:
			var next reflect.Type
			for _, f := range Fields(t) {
				if f.Name == part {
					next = f.Type
				}
			}
			if next == nil {
				return nil
			}
			t = next
		case reflect.Map, reflect.Interface:
			return reflect.TypeOf((*any)(nil)).Elem()
		default:
			return nil
		}
	}
	return t
}

// TableKeys lists the keys valid in the table at path, in declaration
// order.
func (s *Schema) TableKeys(path []string) []string {
	t := s.Type(path)
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for _, f := range Fields(t) {
		keys = append(keys, f.Name)
	}
	return keys
}

// KeyPaths lists every key of the schema as a dotted path, "*" standing
// for an array index: "env.*.args".
func (s *Schema) KeyPaths() []string {
	var out []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for _, f := range Fields(t) {
			p := f.Name
			if prefix != "" {
				p = prefix + "." + f.Name
			}
			out = append(out, p)
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Struct:
				walk(p, ft)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(p+".*", ft.Elem())
			}
		}
	}
	walk("", s.root)
	return out
}

// Default is the default value at a (non-indexed) path.
func (s *Schema) Default(path []string) (reflect.Value, bool) {
	v := s.def
	for _, part := range path {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		found := false
		for i, f := range Fields(v.Type()) {
			if f.Name == part {
				v, found = fieldValues(v)[i], true
				break
			}
		}
		if !found {
			return reflect.Value{}, false
		}
	}
	return v, true
}

// fieldValues lists a struct value's key values in the order of Fields.
func fieldValues(v reflect.Value) []reflect.Value {
	var vals []reflect.Value
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		t := v.Type()
		for j := 0; j < t.NumField(); j++ {
			f := t.Field(j)
			tag := f.Tag.Get("toml")
			if f.Anonymous && tag == "" {
				walk(v.Field(j))
				continue
			}
			if !f.IsExported() || tag == "-" || tag == "" {
				continue
			}
			vals = append(vals, v.Field(j))
		}
	}
	walk(v)
	return vals
}
