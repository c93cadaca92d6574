package hub

import (
	"regexp"
	"strings"
)

// matchAny reports whether name matches one of patterns; nil patterns match
// everything. Patterns follow Python's fnmatch, which huggingface_hub uses
// for allow_patterns: '*' also crosses '/', so "*.safetensors" selects
// shards in subfolders too, and a trailing '/' means the whole folder.
func matchAny(patterns []string, name string) bool {
	if patterns == nil {
		return true
	}
	for _, p := range patterns {
		if globMatch(p, name) {
			return true
		}
	}
	return false
}

func globMatch(pattern, name string) bool {
	if strings.HasSuffix(pattern, "/") {
		pattern += "*"
	}
	re, err := regexp.Compile(globToRegexp(pattern))
	return err == nil && re.MatchString(name)
}

// globToRegexp translates fnmatch syntax: * ? [seq] [!seq].
func globToRegexp(p string) string {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := strings.IndexByte(p[i+1:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := p[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return b.String()
}
