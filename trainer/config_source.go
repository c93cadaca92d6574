package trainer

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// source indexes a config file by key, so that errors found after
// decoding (ranges, conflicts, env args) can point at a line. go-toml's
// decoder reports positions only for the errors it finds itself.
type source struct {
	name string
	// pos maps a key path to where it is written. Paths are dotted with
	// array-of-table indices: "sampling.max_tokens", "env.1.args.min_turns".
	// A table header is recorded under its own path ("env.0", "sampling").
	pos map[string]unstable.Position
	// kv maps a top-level key's path to the byte range of its whole
	// key = value expression.
	kv map[string]unstable.Range
	// headers lists [table] and [[array]] headers in order.
	headers []header
}

type header struct {
	path  []string // as written
	array bool
	at    unstable.Position
}

// scanSource indexes data, which must already be valid TOML.
func scanSource(name string, data []byte) *source {
	s := &source{name: name, pos: map[string]unstable.Position{}, kv: map[string]unstable.Range{}}
	counts := map[string]int{} // array-of-tables path → elements so far
	var p unstable.Parser
	p.Reset(data)
	var table []string // resolved path of the current table
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			written, first := keyParts(e)
			at := p.Shape(first).Start
			s.headers = append(s.headers, header{path: written, array: e.Kind == unstable.ArrayTable, at: at})
			table = resolve(written, counts, e.Kind == unstable.ArrayTable)
			s.set(strings.Join(table, "."), at)
			if e.Kind == unstable.ArrayTable {
				s.set(strings.Join(table[:len(table)-1], "."), at) // the array itself
			}
		case unstable.KeyValue:
			written, first := keyParts(e)
			full := append(append([]string(nil), table...), written...)
			path := strings.Join(full, ".")
			s.set(path, p.Shape(first).Start)
			if len(table) == 0 {
				s.kv[path] = unstable.Range{Offset: first.Offset, Length: e.Value().Raw.Offset + e.Value().Raw.Length - first.Offset}
			}
			s.scanValue(&p, full, e.Value())
		}
	}
	return s
}

func (s *source) set(path string, at unstable.Position) {
	if _, ok := s.pos[path]; !ok {
		s.pos[path] = at
	}
}

// scanValue records the keys inside inline tables (args = { n = 1 }).
func (s *source) scanValue(p *unstable.Parser, path []string, v *unstable.Node) {
	if v.Kind != unstable.InlineTable {
		return
	}
	it := v.Children()
	for it.Next() {
		kv := it.Node()
		if kv.Kind != unstable.KeyValue {
			continue
		}
		written, first := keyParts(kv)
		full := append(append([]string(nil), path...), written...)
		s.set(strings.Join(full, "."), p.Shape(first).Start)
		s.scanValue(p, full, kv.Value())
	}
}

// keyParts returns a key's parts and the range of its first part.
func keyParts(n *unstable.Node) ([]string, unstable.Range) {
	var parts []string
	var first unstable.Range
	it := n.Key()
	for it.Next() {
		k := it.Node()
		if parts == nil {
			first = k.Raw
		}
		parts = append(parts, string(k.Data))
	}
	return parts, first
}

// resolve turns a header's written path into an indexed one: every prefix
// that names an array of tables refers to its last element, and a [[x]]
// header appends a new element.
func resolve(written []string, counts map[string]int, array bool) []string {
	var out []string
	for i, part := range written {
		out = append(out, part)
		key := strings.Join(out, ".")
		if array && i == len(written)-1 {
			out = append(out, strconv.Itoa(counts[key]))
			counts[key]++
			continue
		}
		if n, ok := counts[key]; ok {
			out = append(out, strconv.Itoa(n-1))
		}
	}
	return out
}

// has reports whether path is written in the file.
func (s *source) has(path string) bool {
	if s == nil {
		return false
	}
	_, ok := s.pos[path]
	return ok
}

// at prefixes msg with the file name and the position of the first of
// paths written in the file (or just the file name).
func (s *source) at(msg string, paths ...string) error {
	if s == nil {
		return fmt.Errorf("%s", msg)
	}
	for _, p := range paths {
		if pos, ok := s.pos[p]; ok {
			return fmt.Errorf("%s:%d:%d: %s", s.name, pos.Line, pos.Column, msg)
		}
	}
	return fmt.Errorf("%s: %s", s.name, msg)
}

// displayKey writes an indexed path the way messages show it:
// "env.1.args.n" → "env[1].args.n".
func displayKey(path string) string {
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
