package tomlschema

// compositeEnd is the offset just past the array or inline table that
// opens at data[start] ('[' or '{'): the matching bracket, with strings
// and comments skipped. go-toml's parser gives a composite value's first
// byte only, and an override replacing it needs the whole.
func compositeEnd(data []byte, start int) int {
	depth := 0
	for i := start; i < len(data); i++ {
		switch c := data[i]; c {
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				return i + 1
			}
		case '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case '"', '\'':
			i = stringEnd(data, i) - 1
		}
	}
	return len(data)
}

// stringEnd is the offset just past the string literal opening at
// data[i]: basic ("…", with backslash escapes) or literal ('…'), each
// possibly triple-quoted.
func stringEnd(data []byte, i int) int {
	q := data[i]
	triple := i+2 < len(data) && data[i+1] == q && data[i+2] == q
	n := 1
	if triple {
		n = 3
	}
	for j := i + n; j < len(data); j++ {
		switch {
		case data[j] == '\\' && q == '"':
			j++
		case data[j] == q && (!triple || j+2 < len(data) && data[j+1] == q && data[j+2] == q):
			return j + n
		}
	}
	return len(data)
}
