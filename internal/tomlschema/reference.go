package tomlschema

import (
	"fmt"
	"reflect"
	"strings"
)

// The helpers of a Markdown key reference: which keys are sections, how a
// section is titled, how a key's type is named in the table.

// IsSection reports whether a key's type is a table of the schema (a
// struct, or an array of them) rather than a value.
func IsSection(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct || (t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct)
}

// SectionTitle is the Markdown heading of the section at a generic path
// ("" is the top level).
func (s *Schema) SectionTitle(parent string) string {
	if parent == "" {
		return "### Top level"
	}
	name := strings.ReplaceAll(parent, ".*", "")
	if t := s.Type(PathParts(parent)); t != nil && t.Kind() == reflect.Slice {
		return "### `[[" + name + "]]`"
	}
	return "### `[" + name + "]`"
}

// TypeName names a key's type in a reference table: "integer", "array of
// strings".
func TypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Array:
		return fmt.Sprintf("array of %d %ss", t.Len(), TypeName(t.Elem()))
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Map {
			return "array of tables"
		}
		return "array of " + TypeName(t.Elem()) + "s"
	case reflect.Map:
		return "table"
	}
	return "any"
}
