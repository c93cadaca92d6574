package config

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// decodeAll decodes data into cfg, adding every unknown key and wrong type
// to l. go-toml stops at the first wrong type, so that key = value is
// blanked out and the decode run again, up to MaxProblems times; the
// unknown keys come all at once, from a decode that got to the end.
func decodeAll(l *problems, pm *posMap, data []byte, raw map[string]any, cfg *Config) {
	for range MaxProblems {
		fresh := DefaultConfig()
		fresh.LossMode = cfg.LossMode
		err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(&fresh)
		*cfg = fresh
		var missing *toml.StrictMissingError
		if errors.As(err, &missing) {
			for i := range missing.Errors {
				e := &missing.Errors[i]
				line, col := e.Position()
				l.list = append(l.list, pm.at(line, col, unknownKeyMsg(e.Key())))
			}
			return
		}
		var de *toml.DecodeError
		if err == nil || !errors.As(err, &de) {
			if err != nil {
				l.list = append(l.list, decodeProblem(pm, err, raw))
			}
			return
		}
		l.list = append(l.list, decodeProblem(pm, err, raw))
		line, col := de.Position()
		from, to, ok := expressionAt(l, pm, data, line, col)
		if !ok {
			return // a table, not a key = value: nothing to blank
		}
		data = blank(data, from, to)
	}
}

// expressionAt finds the key = value expression of the edited text that
// holds line:col: from a key that starts its line (an inline table's keys
// do not, and cannot be blanked alone) to the end of its value.
func expressionAt(l *problems, pm *posMap, data []byte, line, col int) (from, to int, ok bool) {
	starts := pm.new
	if len(starts) == 0 {
		starts = lineStarts(data)
	}
	if line < 1 || line > len(starts) {
		return 0, 0, false
	}
	off := starts[line-1] + col - 1
	for _, v := range l.src.Values {
		if k := keyStart(data, v.Start); k >= 0 && off >= k && off < max(v.End, v.Start+1) {
			return k, v.End, true
		}
	}
	return 0, 0, false
}

// keyStart walks back from a value to the start of its line; it is the
// key's offset when only blanks precede the key there, else -1.
func keyStart(data []byte, valueAt int) int {
	i := valueAt
	for i > 0 && data[i-1] != '\n' {
		i--
	}
	j := i
	for j < valueAt && (data[j] == ' ' || data[j] == '\t') {
		j++
	}
	if bytes.ContainsAny(data[j:valueAt], "{,") {
		return -1 // the value is inside an inline table on this line
	}
	return j
}

// decodeProblem turns a go-toml error into one line naming the key and
// the fix.
func decodeProblem(pm *posMap, err error, raw map[string]any) Problem {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return pm.at(line, col, typeErrorMsg(de.Key(), strings.TrimPrefix(de.Error(), "toml: "), raw))
	}
	return Problem{Msg: fmt.Sprintf("%s: %v", pm.name, err)}
}
