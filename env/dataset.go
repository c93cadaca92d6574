package env

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Row is one record of a dataset file, with where it came from
// ("data.jsonl:12", "train.parquet: row 7") for error messages.
type Row struct {
	Where  string
	Fields map[string]any
}

// MaxReported bounds how many bad rows one error lists; the count of all
// of them follows (BadRowsError).
const MaxReported = 5

// LoadRows reads a local dataset file, choosing the reader by extension:
// .jsonl, .json or .ndjson (one JSON object per line), any of those
// gzipped (.gz), or .parquet. Loading is strict: if any row is malformed
// the whole load fails, naming up to five bad rows as file:line and how
// many there were, because training on a silently shortened dataset is
// worse than fixing a line.
func LoadRows(path string) ([]Row, error) {
	return LoadRowsAs(path, "")
}

// LoadRowsAs is LoadRows with the format given ("jsonl" or "parquet", as
// an environment.toml may set it) rather than read from the extension;
// "" reads it from the extension.
func LoadRowsAs(path, format string) ([]Row, error) {
	if format == "" {
		format = formatOf(path)
	}
	switch format {
	case "jsonl":
		return LoadJSONL(path)
	case "parquet":
		return LoadParquet(path)
	}
	return nil, fmt.Errorf("%s: unknown dataset format %q; use a .jsonl (optionally .gz) or .parquet file, or set format = \"jsonl\" or \"parquet\"", path, format)
}

// formatOf guesses a file's format from its name.
func formatOf(path string) string {
	name := strings.ToLower(strings.TrimSuffix(path, ".gz"))
	switch filepath.Ext(name) {
	case ".jsonl", ".json", ".ndjson":
		return "jsonl"
	case ".parquet":
		return "parquet"
	}
	return strings.TrimPrefix(filepath.Ext(name), ".")
}

// LoadJSONL reads one JSON object per line (blank lines are skipped). A
// file ending in .gz is decompressed. Numbers keep their text (json.Number)
// so an answer such as "1.50" is not rewritten. See LoadRows for how
// malformed lines are reported.
func LoadJSONL(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %v; check the path", path, err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(strings.ToLower(path), ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: not a gzip file (%v); drop the .gz suffix or compress it with gzip", path, err)
		}
		defer gz.Close()
		r = gz
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var rows []Row
	var bad []string
	badCount, line := 0, 0
	for sc.Scan() {
		line++
		raw := sc.Bytes()
		if line == 1 && (bytes.HasPrefix(raw, []byte{0xFF, 0xFE}) || bytes.HasPrefix(raw, []byte{0xFE, 0xFF})) {
			return nil, fmt.Errorf("%s: the file is UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8", path)
		}
		// A UTF-8 byte-order mark (Windows editors, Excel, pandas'
		// utf-8-sig) starts the file, or a line where files were
		// concatenated; it is never part of a JSON value, so drop it.
		text := bytes.TrimSpace(bytes.TrimPrefix(raw, utf8BOM))
		if len(text) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, line)
		fields, err := decodeObject(text)
		if err != nil {
			badCount++
			if len(bad) < MaxReported {
				bad = append(bad, where+": "+err.Error())
			}
			continue
		}
		rows = append(rows, Row{Where: where, Fields: fields})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", path, line+1, err)
	}
	if badCount > 0 {
		return nil, BadRowsError(bad, badCount, badCount+len(rows), "line")
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows; a JSONL dataset has one JSON object per line", path)
	}
	return rows, nil
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// decodeObject parses one JSONL line, which must be exactly one object.
func decodeObject(text []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON (%v)", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value on the line; put one object per line")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a JSON %s, not an object; each line must be {\"field\": value, ...}", JSONKind(v))
	}
	return obj, nil
}

// JSONKind names the JSON type of a decoded value, for error messages.
func JSONKind(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// BadRowsError is the one error of a strict load: the first bad rows'
// messages (at most MaxReported), how many were bad of how many units
// ("line", "row"), and that nothing was loaded.
func BadRowsError(bad []string, count, total int, unit string) error {
	return fmt.Errorf("%s; %d of %d %ss are malformed and nothing was loaded; fix or remove them",
		strings.Join(bad, "; "), count, total, unit)
}

// TextField returns a row's field as text: a string as it is, a number in
// its shortest form, a boolean as true/false. A missing field or another
// type is an error naming the row and the fields it has.
func TextField(r Row, name string) (string, error) {
	v, ok := r.Fields[name]
	if !ok {
		return "", fmt.Errorf("%s: no field %q (the row has %s); set the field name in the dataset config", r.Where, name, FieldNames(r.Fields))
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int:
		return strconv.Itoa(x), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), nil
	case bool:
		return strconv.FormatBool(x), nil
	case []byte:
		return string(x), nil
	case nil:
		return "", fmt.Errorf("%s: field %q is null; give it a value or drop the row", r.Where, name)
	}
	return "", fmt.Errorf("%s: field %q is a %s, not text or a number", r.Where, name, JSONKind(v))
}

// FieldNames lists a row's field names, quoted and sorted, for error
// messages that say what a row has.
func FieldNames(m map[string]any) string {
	if len(m) == 0 {
		return "no fields"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, strconv.Quote(k))
	}
	sortStrings(names)
	return strings.Join(names, ", ")
}

// QAFields names the question and answer fields of a dataset's rows.
type QAFields struct {
	Question string
	Answer   string // "" when the rows have no reference answer
}

// QAExamples turns rows into examples with prompt = system + the question
// field. answer, when set, post-processes the answer field (GSM8K keeps
// the text after "####"). Like loading, it fails on the first bad rows
// rather than dropping them.
func QAExamples(rows []Row, f QAFields, system string, answer func(string) string) ([]Example, error) {
	out := make([]Example, 0, len(rows))
	var bad []string
	badCount := 0
	for i, r := range rows {
		q, err := TextField(r, f.Question)
		var a string
		if err == nil && f.Answer != "" {
			a, err = TextField(r, f.Answer)
		}
		if err != nil {
			badCount++
			if len(bad) < MaxReported {
				bad = append(bad, err.Error())
			}
			continue
		}
		if answer != nil {
			a = answer(a)
		}
		out = append(out, Example{ID: strconv.Itoa(i), Prompt: ChatPrompt(system, q), Answer: a})
	}
	if badCount > 0 {
		return nil, BadRowsError(bad, badCount, len(rows), "row")
	}
	return out, nil
}
