package trainer

import (
	"fmt"
	"reflect"
	"strings"
)

// ConfigReference renders every config key as Markdown tables, one per
// section: key, type, default (from DefaultConfig) and meaning. It is the
// generated part of docs/config.md; a test keeps the two equal.
func ConfigReference() string {
	// Rows are grouped by section in the order sections first appear, so
	// top-level keys declared after a table still land in "Top level".
	var order []string
	rows := map[string][]string{}
	for _, path := range allKeyPaths() {
		t := schemaType(pathParts(path))
		if isSection(t) {
			continue
		}
		parent := parentPath(path)
		if _, ok := rows[parent]; !ok {
			order = append(order, parent)
		}
		info := keyInfos[path]
		meaning := info.doc
		if info.ignored != "" {
			meaning = "**Ignored locally:** " + info.ignored + ". " + meaning
		}
		name := path[strings.LastIndex(path, ".")+1:]
		rows[parent] = append(rows[parent], fmt.Sprintf("| `%s` | %s | %s | %s |\n", name, typeName(t), docDefault(path, t, info), strings.ReplaceAll(meaning, "|", `\|`)))
	}
	var b strings.Builder
	for _, sec := range order {
		b.WriteString("\n" + sectionTitle(sec) + "\n\n")
		if info, ok := keyInfos[sec]; ok && sec != "" {
			b.WriteString(info.doc + "\n\n")
		}
		b.WriteString("| key | type | default | meaning |\n|---|---|---|---|\n")
		for _, r := range rows[sec] {
			b.WriteString(r)
		}
	}
	return b.String()
}

// isSection reports whether a key's type is a table of the schema (a
// struct, or an array of them) rather than a value.
func isSection(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct || (t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct)
}

func sectionTitle(parent string) string {
	if parent == "" {
		return "### Top level"
	}
	name := strings.ReplaceAll(parent, ".*", "")
	if t := schemaType(pathParts(parent)); t != nil && t.Kind() == reflect.Slice {
		return "### `[[" + name + "]]`"
	}
	return "### `[" + name + "]`"
}

func pathParts(path string) []string {
	var out []string
	for _, p := range strings.Split(path, ".") {
		if p != "*" {
			out = append(out, p)
		}
	}
	return out
}

func typeName(t reflect.Type) string {
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
		return fmt.Sprintf("array of %d %ss", t.Len(), typeName(t.Elem()))
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Map {
			return "array of tables"
		}
		return "array of " + typeName(t.Elem()) + "s"
	case reflect.Map:
		return "table"
	}
	return "any"
}

func docDefault(path string, t reflect.Type, info keyInfo) string {
	if info.def != "" {
		return info.def
	}
	if strings.Contains(path, "*") {
		return "`" + tomlValue(reflect.Zero(t)) + "`"
	}
	v, ok := defaultAt(pathParts(path))
	if !ok {
		return "?"
	}
	s := tomlValue(v)
	if s == "unset" {
		return s
	}
	return "`" + s + "`"
}
