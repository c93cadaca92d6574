package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// Write stores tensors and metadata at path. The output is deterministic:
// tensors are laid out by descending element size, then by name (for the
// usual single-dtype file that is plain name order), which keeps every
// tensor naturally aligned because the data section starts 8-byte aligned;
// the header is compact JSON padded with spaces to a multiple of 8 bytes, as
// the reference implementation pads it.
//
// The write is atomic (internal/atomicfile): a crash leaves either the old
// file or the new one, never a torn one.
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	ordered, header, err := layout(tensors, metadata)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		if err := writeBody(w, ordered, header); err != nil {
			return fmt.Errorf("%s: write: %v", path, err)
		}
		return nil
	})
}

// Encode returns the bytes Write would store.
func Encode(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	ordered, header, err := layout(tensors, metadata)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeBody(&buf, ordered, header); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// layout validates tensors, orders them and builds the padded header.
func layout(tensors []Tensor, metadata map[string]string) ([]Tensor, []byte, error) {
	ordered := append([]Tensor(nil), tensors...)
	sort.SliceStable(ordered, func(i, j int) bool {
		si, sj := ordered[i].DType.Size(), ordered[j].DType.Size()
		if si != sj {
			return si > sj
		}
		return ordered[i].Name < ordered[j].Name
	})
	var h bytes.Buffer
	h.WriteByte('{')
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		h.WriteString(quote(metadataKey) + ":{")
		for i, k := range keys {
			if i > 0 {
				h.WriteByte(',')
			}
			h.WriteString(quote(k) + ":" + quote(metadata[k]))
		}
		h.WriteByte('}')
	}
	var offset uint64
	for i, t := range ordered {
		if t.Name == metadataKey {
			return nil, nil, fmt.Errorf("tensor name %q is reserved for metadata", metadataKey)
		}
		if i > 0 && t.Name == ordered[i-1].Name {
			return nil, nil, fmt.Errorf("tensor %q given twice", t.Name)
		}
		if !t.DType.Valid() {
			return nil, nil, fmt.Errorf("tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		n, err := numElements(t.Shape)
		if err != nil {
			return nil, nil, fmt.Errorf("tensor %q: %v", t.Name, err)
		}
		if need := n * uint64(t.DType.Size()); uint64(len(t.data)) != need {
			return nil, nil, fmt.Errorf("tensor %q: %d bytes but shape %v of %s needs %d", t.Name, len(t.data), t.Shape, t.DType, need)
		}
		if h.Len() > 1 {
			h.WriteByte(',')
		}
		h.WriteString(quote(t.Name) + `:{"dtype":` + quote(string(t.DType)) + `,"shape":[`)
		for k, d := range t.Shape {
			if k > 0 {
				h.WriteByte(',')
			}
			h.WriteString(strconv.Itoa(d))
		}
		end := offset + uint64(len(t.data))
		fmt.Fprintf(&h, `],"data_offsets":[%d,%d]}`, offset, end)
		offset = end
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}
	return ordered, h.Bytes(), nil
}

func writeBody(w io.Writer, ordered []Tensor, header []byte) error {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(header); err != nil {
		return err
	}
	for _, t := range ordered {
		if _, err := w.Write(t.data); err != nil {
			return err
		}
	}
	return nil
}

// quote writes a JSON string without HTML escaping, so names containing
// '<' or '&' read back byte-identical in any JSON parser.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
