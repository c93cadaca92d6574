package tomlschema

import (
	"strconv"
	"strings"
)

// Key paths come in three spellings: indexed ("env.1.args"), as a
// Source's Pos has them; generic ("env.*.args"), as Schema.KeyPaths has
// them; and bare ("env.args"), as go-toml's keys and Schema.Type take them.

// DisplayKey writes an indexed path the way messages show it:
// "env.1.args.n" → "env[1].args.n".
func DisplayKey(path string) string {
	parts := strings.Split(path, ".")
	var b strings.Builder
	for i, p := range parts {
		if _, err := strconv.Atoi(p); err == nil && i > 0 {
			b.WriteString("[" + p + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

// StripIndices drops the array indices of an indexed key.
func StripIndices(key []string) []string {
	var out []string
	for _, k := range key {
		if _, err := strconv.Atoi(k); err == nil {
			continue
		}
		out = append(out, k)
	}
	return out
}

// GenericPath replaces array indices by "*": "env.1.version" →
// "env.*.version".
func GenericPath(path string) string {
	parts := strings.Split(path, ".")
	for i, p := range parts {
		if _, err := strconv.Atoi(p); err == nil && i > 0 {
			parts[i] = "*"
		}
	}
	return strings.Join(parts, ".")
}

// ParentPath is the generic path of the table holding a generic path's
// key: "env.*.args" → "env", "sampling.seed" → "sampling", "seed" → "".
func ParentPath(p string) string {
	p = strings.TrimSuffix(p, ".*")
	if i := strings.LastIndex(p, "."); i >= 0 {
		return strings.TrimSuffix(p[:i], ".*")
	}
	return ""
}

// PathParts splits a generic path into a bare key: "env.*.args" →
// [env args].
func PathParts(path string) []string {
	var out []string
	for _, p := range strings.Split(path, ".") {
		if p != "*" {
			out = append(out, p)
		}
	}
	return out
}
