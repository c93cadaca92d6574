package tomlschema

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// KindName names what a key of type t takes, as error messages say it:
// "an integer", "an array of 2 numbers", "a table".
func KindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Array:
		return fmt.Sprintf("an array of %d %s", t.Len(), strings.TrimPrefix(strings.TrimPrefix(KindName(t.Elem()), "an "), "a ")+"s")
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct || t.Elem().Kind() == reflect.Map {
			return "an array of tables"
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "a table"
	}
	return "a value"
}

// FormatValue writes a value the way a config file would; a nil pointer
// is "unset".
func FormatValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "unset"
		}
		return FormatValue(v.Elem())
	case reflect.String:
		return strconv.Quote(v.String())
	case reflect.Float64, reflect.Float32:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Len() == 0 {
			return "[]"
		}
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = FormatValue(v.Index(i))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.Map:
		if v.Len() == 0 {
			return "{}"
		}
	}
	return fmt.Sprint(v.Interface())
}
