package config

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/grpo-dev/grpo/internal/tomlschema"
)

// Reference renders every config key as Markdown tables, one per
// section: key, type, default (from DefaultConfig) and meaning. It is the
// generated part of docs/config.md; a test keeps the two equal.
func Reference() string {
	// Rows are grouped by section in the order sections first appear, so
	// top-level keys declared after a table still land in "Top level".
	var order []string
	rows := map[string][]string{}
	for _, path := range schema.KeyPaths() {
		t := schema.Type(tomlschema.PathParts(path))
		if tomlschema.IsSection(t) {
			continue
		}
		parent := tomlschema.ParentPath(path)
		if _, ok := rows[parent]; !ok {
			order = append(order, parent)
		}
		info := keyInfos[path]
		meaning := info.doc
		if info.ignored != "" {
			meaning = "**Ignored locally:** " + info.ignored + ". " + meaning
		}
		if info.deprecated != "" {
			meaning = "**Deprecated** (prime lab doctor: " + info.deprecated + ") " + meaning
		}
		name := path[strings.LastIndex(path, ".")+1:]
		rows[parent] = append(rows[parent], fmt.Sprintf("| `%s` | %s | %s | %s |\n", name, tomlschema.TypeName(t), docDefault(path, t, info), strings.ReplaceAll(meaning, "|", `\|`)))
	}
	var b strings.Builder
	for _, sec := range order {
		b.WriteString("\n" + schema.SectionTitle(sec) + "\n\n")
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

func docDefault(path string, t reflect.Type, info keyInfo) string {
	if info.def != "" {
		return info.def
	}
	if strings.Contains(path, "*") {
		return "`" + tomlschema.FormatValue(reflect.Zero(t)) + "`"
	}
	v, ok := schema.Default(tomlschema.PathParts(path))
	if !ok {
		return "?"
	}
	s := tomlschema.FormatValue(v)
	if s == "unset" {
		return s
	}
	return "`" + s + "`"
}
