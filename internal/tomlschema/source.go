package tomlschema

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Source indexes a TOML file by key, so that errors found after decoding
// (ranges, conflicts, env args) can point at a line.
type Source struct {
	Name string
	// Pos maps a key path to where it is written. Paths are dotted with
	// array-of-table indices: "sampling.max_tokens", "env.1.args.min_turns".
	// A table header is recorded under its own path ("env.0", "sampling").
	Pos map[string]unstable.Position
	// KV maps a top-level key's path to the byte range of its whole
	// key = value expression.
	KV map[string]unstable.Range
	// Headers lists [table] and [[array]] headers in order.
	Headers []Header
	// Values maps every key written as key = value (inline-table keys
	// too) to the byte range of its value, so a command-line override can
	// replace it in the text; HeaderEnd maps a table header's path to the
	// offset where its line ends, where an override can add a key.
	Values    map[string]Value
	HeaderEnd map[string]int
	// Flags maps the paths set on the command line to the flag that set
	// them ("--set sampling.temperature=0.7"): Has counts them, and At
	// names the flag instead of a position.
	Flags map[string]string
}

// Value is where a key's value is written: bytes [Start, End) of the
// file; Inline is set for an inline table ({ ... }), which can take more
// keys.
type Value struct {
	Start, End int
	Inline     bool
}

// Header is one [table] or [[array]] header.
type Header struct {
	Path  []string // as written
	Array bool
	At    unstable.Position
}

// Scan indexes data, which must already be valid TOML; name (usually the
// file path) prefixes the messages of At.
func Scan(name string, data []byte) *Source {
	s := &Source{Name: name, Pos: map[string]unstable.Position{}, KV: map[string]unstable.Range{},
		Values: map[string]Value{}, HeaderEnd: map[string]int{}}
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
			s.Headers = append(s.Headers, Header{Path: written, Array: e.Kind == unstable.ArrayTable, At: at})
			table = resolve(written, counts, e.Kind == unstable.ArrayTable)
			s.set(strings.Join(table, "."), at)
			s.HeaderEnd[strings.Join(table, ".")] = lineEnd(data, int(at.Offset))
			if e.Kind == unstable.ArrayTable {
				s.set(strings.Join(table[:len(table)-1], "."), at) // the array itself
			}
		case unstable.KeyValue:
			written, first := keyParts(e)
			full := append(append([]string(nil), table...), written...)
			path := strings.Join(full, ".")
			s.set(path, p.Shape(first).Start)
			if len(table) == 0 {
				s.KV[path] = unstable.Range{Offset: first.Offset, Length: e.Value().Raw.Offset + e.Value().Raw.Length - first.Offset}
			}
			s.scanValue(&p, data, full, e)
		}
	}
	return s
}

// lineEnd is the offset of the newline ending the line at off (or the
// end of data).
func lineEnd(data []byte, off int) int {
	for off < len(data) && data[off] != '\n' {
		off++
	}
	return off
}

func (s *Source) set(path string, at unstable.Position) {
	if _, ok := s.Pos[path]; !ok {
		s.Pos[path] = at
	}
}

// scanValue records where a value is written and the keys inside inline
// tables (args = { n = 1 }).
func (s *Source) scanValue(p *unstable.Parser, data []byte, path []string, kv *unstable.Node) {
	v := kv.Value()
	start := int(v.Raw.Offset)
	end := start + int(v.Raw.Length)
	if v.Kind == unstable.Array || v.Kind == unstable.InlineTable {
		// The parser gives no range for an array: find the value after
		// the key's "=".
		start = valueStart(data, int(lastKey(kv).Offset+lastKey(kv).Length))
		end = compositeEnd(data, start)
	}
	s.Values[strings.Join(path, ".")] = Value{Start: start, End: end, Inline: v.Kind == unstable.InlineTable}
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
		s.scanValue(p, data, full, kv)
	}
}

// lastKey is the range of a key's last part.
func lastKey(n *unstable.Node) unstable.Range {
	var r unstable.Range
	it := n.Key()
	for it.Next() {
		r = it.Node().Raw
	}
	return r
}

// valueStart finds the value after the end of a key: past the "=" (and
// a quoted key's closing quote before it) and the blanks after it.
func valueStart(data []byte, off int) int {
	for off < len(data) && data[off] != '=' {
		off++
	}
	off++
	for off < len(data) && (data[off] == ' ' || data[off] == '\t') {
		off++
	}
	return off
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

// Locate is the position of the first of paths written in the file;
// ok is false when none is (or one was set by a flag, which has none).
func (s *Source) Locate(paths ...string) (pos unstable.Position, ok bool) {
	if s == nil {
		return pos, false
	}
	for _, p := range paths {
		if _, flag := s.Flags[p]; flag {
			return pos, false
		}
		if pos, ok := s.Pos[p]; ok {
			return pos, true
		}
	}
	return pos, false
}

// Has reports whether path is written in the file or set by a flag; a
// nil Source (a config built in Go) has no keys.
func (s *Source) Has(path string) bool {
	if s == nil {
		return false
	}
	_, ok := s.Pos[path]
	_, flag := s.Flags[path]
	return ok || flag
}

// At prefixes msg with the file name and the position of the first of
// paths written in the file (or just the file name; nothing for a nil
// Source).
func (s *Source) At(msg string, paths ...string) error {
	if s == nil {
		return fmt.Errorf("%s", msg)
	}
	for _, p := range paths {
		if flag, ok := s.Flags[p]; ok {
			return fmt.Errorf("%s: %s", flag, msg)
		}
		if pos, ok := s.Pos[p]; ok {
			return fmt.Errorf("%s:%d:%d: %s", s.Name, pos.Line, pos.Column, msg)
		}
	}
	return fmt.Errorf("%s: %s", s.Name, msg)
}
