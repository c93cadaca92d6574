package config

import (
	"fmt"
	"sort"

	"github.com/grpo-dev/grpo/internal/tomlschema"
	"github.com/pelletier/go-toml/v2/unstable"
)

// posMap maps positions in the edited text (the file with its overrides
// written in) back to the file, so a problem is reported at the line the
// user wrote — or, inside an override's text, at its flag.
type posMap struct {
	name     string
	old, new []int // line start offsets of the file and of the edited text
	edits    []edit
	starts   []int // each edit's offset in the edited text
}

// applyEdits writes edits (sorted, not overlapping) into data.
func applyEdits(name string, data []byte, edits []edit) ([]byte, *posMap) {
	out := make([]byte, 0, len(data))
	m := &posMap{name: name, edits: edits}
	prev := 0
	for _, e := range edits {
		out = append(out, data[prev:e.at]...)
		m.starts = append(m.starts, len(out))
		out = append(out, e.text...)
		prev = e.end
	}
	out = append(out, data[prev:]...)
	m.old, m.new = lineStarts(data), lineStarts(out)
	return out, m
}

func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, b := range data {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// place maps a 1-based line and column of the edited text to the file's,
// or to the flag whose text holds it.
func (m *posMap) place(line, col int) (flag string, l, c int) {
	if len(m.edits) == 0 || line < 1 || line > len(m.new) {
		return "", line, col
	}
	off := m.new[line-1] + col - 1
	delta := 0
	for i, e := range m.edits {
		start := m.starts[i]
		if off < start {
			break
		}
		if off < start+len(e.text) {
			return e.flag, 0, 0
		}
		delta = start + len(e.text) - e.end
	}
	off -= delta
	l = sort.Search(len(m.old), func(i int) bool { return m.old[i] > off })
	return "", l, off - m.old[l-1] + 1
}

// at formats msg at a position of the edited text.
func (m *posMap) at(line, col int, msg string) Problem {
	flag, l, c := m.place(line, col)
	if flag != "" {
		return Problem{Flag: flag, Msg: fmt.Sprintf("%s: %s", flag, msg)}
	}
	return Problem{Line: l, Col: c, Msg: fmt.Sprintf("%s:%d:%d: %s", m.name, l, c, msg)}
}

// remap moves src's positions (scanned from the edited text) to the
// file's, and records the paths set by flags.
func (m *posMap) remap(src *tomlschema.Source, flags map[string]string) {
	src.Flags = map[string]string{}
	for path, pos := range src.Pos {
		flag, l, c := m.place(pos.Line, pos.Column)
		if flag != "" {
			src.Flags[path] = flag
			continue
		}
		src.Pos[path] = unstable.Position{Line: l, Column: c}
	}
	for path, flag := range flags {
		src.Flags[path] = flag
	}
	for i := range src.Headers {
		h := &src.Headers[i]
		if _, l, c := m.place(h.At.Line, h.At.Column); l > 0 {
			h.At = unstable.Position{Line: l, Column: c}
		}
	}
}
