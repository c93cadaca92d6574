package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/internal/tomlschema"
)

// MaxProblems is how many problems one error lists: enough to fix a
// config in one go, few enough to read.
const MaxProblems = 10

// Problem is one thing wrong with a config, as the line that says it:
// "file:line:col: key ...: problem; fix".
type Problem struct {
	// Flag is the command-line flag it is about, if any.
	Flag string
	// Line and Col locate it in the file; 0 when it has no place there
	// (a missing key, a flag).
	Line, Col int
	Msg       string
}

// Problems is every problem found in a config: the flags' first, in the
// order given, then the file's in file order (those without a place in it
// first). Parse, Validate and ValidateEnvs return one
// as their error; its Error is one line per problem, up to MaxProblems.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, 0, min(len(ps), MaxProblems)+1)
	for i, p := range ps {
		if i == MaxProblems {
			lines = append(lines, fmt.Sprintf("(%d more problems not shown: fix these first)", len(ps)-MaxProblems))
			break
		}
		lines = append(lines, p.Msg)
	}
	return strings.Join(lines, "\n")
}

// problems collects a config's problems against its source.
type problems struct {
	src  *tomlschema.Source
	list Problems
}

// at adds msg located at the first of paths written in the file (or set
// by a flag).
func (l *problems) at(msg string, paths ...string) {
	p := Problem{Msg: l.src.At(msg, paths...).Error()}
	if pos, ok := l.src.Locate(paths...); ok {
		p.Line, p.Col = pos.Line, pos.Column
	} else if l.src != nil {
		for _, path := range paths {
			if f, ok := l.src.Flags[path]; ok {
				p.Flag = f
				break
			}
			if l.src.Has(path) {
				break
			}
		}
	}
	l.list = append(l.list, p)
}

// flag adds a problem of a flag's own (its key or value).
func (l *problems) flag(flag string, err error) {
	l.list = append(l.list, Problem{Flag: flag, Msg: fmt.Sprintf("%s: %v", flag, err)})
}

// add adds another check's problems, or its error as one positionless
// problem.
func (l *problems) add(err error) {
	if ps, ok := err.(Problems); ok {
		l.list = append(l.list, ps...)
	} else if err != nil {
		l.list = append(l.list, Problem{Msg: err.Error()})
	}
}

// err is the problems in file order, without repeats, or nil.
func (l *problems) err() error {
	if len(l.list) == 0 {
		return nil
	}
	seen := map[string]bool{}
	out := l.list[:0]
	for _, p := range l.list {
		if !seen[p.Msg] {
			seen[p.Msg] = true
			out = append(out, p)
		}
	}
	rank := func(p Problem) int {
		switch {
		case p.Flag != "":
			return 0
		case p.Line == 0:
			return 1
		}
		return 2
	}
	sort.SliceStable(out, func(i, j int) bool {
		if ri, rj := rank(out[i]), rank(out[j]); ri != rj {
			return ri < rj
		}
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].Col < out[j].Col
	})
	return out
}
