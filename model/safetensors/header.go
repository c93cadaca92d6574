package safetensors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// maxHeaderSize bounds the JSON header, as the reference Rust implementation
// does: a larger length field means a corrupt or hostile file, and trusting
// it would make us parse (or allocate) gigabytes.
const maxHeaderSize = 100_000_000

// metadataKey is the reserved header key holding free-form string metadata.
const metadataKey = "__metadata__"

// entry is one validated tensor description from a header.
type entry struct {
	name       string
	dtype      DType
	shape      []int
	begin, end uint64
}

// parseHeader decodes and validates the JSON header against a data section
// of dataLen bytes. Every error is prefixed with path.
func parseHeader(path string, header []byte, dataLen uint64) ([]entry, map[string]string, error) {
	fail := func(format string, args ...any) ([]entry, map[string]string, error) {
		return nil, nil, fmt.Errorf("%s: "+format, append([]any{path}, args...)...)
	}
	dec := json.NewDecoder(bytes.NewReader(header))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return fail("header is not a JSON object (is this a safetensors file?)")
	}
	var entries []entry
	var metadata map[string]string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail("header is not valid JSON: %v", err)
		}
		key, _ := tok.(string) // inside an object the decoder only yields string keys
		if seen[key] {
			return fail("header names %q twice", key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fail("header is not valid JSON: %v", err)
		}
		if key == metadataKey {
			if metadata, err = parseMetadata(raw); err != nil {
				return fail("%v", err)
			}
			continue
		}
		e, err := parseEntry(key, raw, dataLen)
		if err != nil {
			return fail("tensor %q: %v", key, err)
		}
		entries = append(entries, e)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return fail("header is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("header has data after its JSON object (only space padding may follow)")
	}
	if err := checkOverlap(entries); err != nil {
		return fail("%v", err)
	}
	// Hugging Face's safetensors refuses a file whose tensors do not reach
	// the end of the data (MetadataIncompleteBuffer); the extra bytes are
	// an interrupted rewrite, an append, or the wrong header, never data.
	var last uint64
	for _, e := range entries {
		last = max(last, e.end)
	}
	if last < dataLen {
		return fail("%d bytes after the last tensor's data (the tensors end at byte %d of a %d-byte data section); the file is damaged or was appended to: download or write it again", dataLen-last, last, dataLen)
	}
	return entries, metadata, nil
}

func parseMetadata(raw json.RawMessage) (map[string]string, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s must be an object of string values, got %s", metadataKey, abbreviate(raw))
	}
	return m, nil
}

type rawEntry struct {
	DType       *string           `json:"dtype"`
	Shape       []json.RawMessage `json:"shape"`
	DataOffsets []json.RawMessage `json:"data_offsets"`
}

func parseEntry(name string, raw json.RawMessage, dataLen uint64) (entry, error) {
	var r rawEntry
	if err := json.Unmarshal(raw, &r); err != nil {
		return entry{}, fmt.Errorf("want {\"dtype\",\"shape\",\"data_offsets\"}, got %s", abbreviate(raw))
	}
	if r.DType == nil {
		return entry{}, fmt.Errorf("missing \"dtype\"")
	}
	dtype, err := parseDType(*r.DType)
	if err != nil {
		return entry{}, err
	}
	if r.Shape == nil {
		return entry{}, fmt.Errorf("missing \"shape\" (a scalar has shape [])")
	}
	shape := make([]int, len(r.Shape))
	for i, d := range r.Shape {
		v, err := strconv.ParseInt(string(d), 10, 64)
		if err != nil || int64(int(v)) != v {
			return entry{}, fmt.Errorf("shape dimension %d is %s, want an integer", i, abbreviate(d))
		}
		shape[i] = int(v)
	}
	n, err := numElements(shape)
	if err != nil {
		return entry{}, err
	}
	if len(r.DataOffsets) != 2 {
		return entry{}, fmt.Errorf("\"data_offsets\" must be [begin, end], got %s", offsetsText(r.DataOffsets))
	}
	var off [2]uint64
	for i, o := range r.DataOffsets {
		if off[i], err = strconv.ParseUint(string(o), 10, 64); err != nil {
			return entry{}, fmt.Errorf("\"data_offsets\" must be two non-negative integers, got %s", offsetsText(r.DataOffsets))
		}
	}
	if off[0] > off[1] {
		return entry{}, fmt.Errorf("\"data_offsets\" [%d,%d] has begin > end", off[0], off[1])
	}
	if off[1] > dataLen {
		return entry{}, fmt.Errorf("data_offsets [%d,%d] end beyond the data section of %d bytes (file truncated?)", off[0], off[1], dataLen)
	}
	if need := n * uint64(dtype.Size()); off[1]-off[0] != need {
		return entry{}, fmt.Errorf("data_offsets [%d,%d] but shape %v of %s needs %d bytes", off[0], off[1], shape, dtype, need)
	}
	return entry{name: name, dtype: dtype, shape: shape, begin: off[0], end: off[1]}, nil
}

// checkOverlap rejects tensors whose byte ranges share a byte. Gaps between
// tensors are tolerated: they waste space but cannot alias data.
func checkOverlap(entries []entry) error {
	byBegin := append([]entry(nil), entries...)
	sort.Slice(byBegin, func(i, j int) bool {
		if byBegin[i].begin != byBegin[j].begin {
			return byBegin[i].begin < byBegin[j].begin
		}
		return byBegin[i].name < byBegin[j].name
	})
	var prev *entry
	for i := range byBegin {
		e := &byBegin[i]
		if e.begin == e.end {
			continue // empty tensors own no bytes
		}
		if prev != nil && e.begin < prev.end {
			return fmt.Errorf("tensors %q (data_offsets [%d,%d]) and %q (data_offsets [%d,%d]) overlap", prev.name, prev.begin, prev.end, e.name, e.begin, e.end)
		}
		prev = e
	}
	return nil
}

func offsetsText(raw []json.RawMessage) string {
	parts := make([][]byte, len(raw))
	for i, r := range raw {
		parts[i] = r
	}
	return abbreviate(append(append([]byte("["), bytes.Join(parts, []byte(","))...), ']'))
}

// abbreviate keeps error lines one line and short when quoting input.
func abbreviate(b []byte) string {
	s := string(bytes.Join(bytes.Fields(b), []byte(" ")))
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
