package safetensors

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// rawFile assembles a file from a literal header and a data section of
// dataLen zero bytes, without padding, so tests can state any header.
func rawFile(header string, dataLen int) []byte {
	b := make([]byte, 8, 8+len(header)+dataLen)
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, dataLen)...)
}

// mustFor adapts a (Tensor, error) constructor call for use in a literal.
func mustFor(t *testing.T) func(Tensor, error) Tensor {
	return func(tensor Tensor, err error) Tensor {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return tensor
	}
}

func TestWriteOpenRoundTrip(t *testing.T) {
	must := mustFor(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	vals := []float32{1, -2.5, 3.25, 0, 1e-3, -7, 100, 0.5}
	raw := make([]byte, 16) // two I64s: 1 and 2
	raw[0], raw[8] = 1, 2
	in := []Tensor{
		must(NewF32("w.f32", []int{2, 4}, vals)),
		must(NewBF16("w.bf16", []int{8}, vals)),
		must(NewF16("a.f16", []int{4, 2}, vals)),
		must(NewTensor("ids", I64, []int{2}, raw)),
		must(NewF32("scalar", []int{}, []float32{42})),
		must(NewF32("empty", []int{0, 3}, nil)),
	}
	meta := map[string]string{"format": "pt", "note": "<&>"}
	if err := Write(path, in, meta); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, want := f.Names(), []string{"a.f16", "empty", "ids", "scalar", "w.bf16", "w.f32"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Names = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(f.Metadata(), meta) {
		t.Errorf("Metadata = %v, want %v", f.Metadata(), meta)
	}
	for _, w := range in {
		g, ok := f.Tensor(w.Name)
		if !ok {
			t.Fatalf("tensor %q missing", w.Name)
		}
		if g.DType != w.DType || !reflect.DeepEqual(g.Shape, w.Shape) || !bytes.Equal(g.Bytes(), w.Bytes()) {
			t.Errorf("tensor %q: got %s %v % x, want %s %v % x", w.Name, g.DType, g.Shape, g.Bytes(), w.DType, w.Shape, w.Bytes())
		}
	}
	got, _ := f.Tensor("w.f32")
	if fs, err := got.Float32s(); err != nil || !reflect.DeepEqual(fs, vals) {
		t.Errorf("w.f32 Float32s = %v, %v; want %v", fs, err, vals)
	}
	// Every value is exact in bf16 except 1e-3, which rounds to nearest.
	wantBF := []float32{1, -2.5, 3.25, 0, BF16ToF32(F32ToBF16(1e-3)), -7, 100, 0.5}
	got, _ = f.Tensor("w.bf16")
	if fs, err := got.Float32s(); err != nil || !reflect.DeepEqual(fs, wantBF) {
		t.Errorf("w.bf16 Float32s = %v, %v; want %v", fs, err, wantBF)
	}
	bits, ok := got.BF16Bits()
	if !ok || len(bits) != 8 || bits[0] != 0x3f80 || bits[1] != 0xc020 {
		t.Errorf("BF16Bits = %#04x, %v; want 0x3f80, 0xc020, ...", bits, ok)
	}
	if _, ok := f.Tensor("ids"); !ok {
		t.Fatal("ids missing")
	}
	ids, _ := f.Tensor("ids")
	if _, err := ids.Float32s(); err == nil || !strings.Contains(err.Error(), "I64 does not convert") {
		t.Errorf("Float32s on I64: err = %v", err)
	}
	if _, ok := ids.BF16Bits(); ok {
		t.Error("BF16Bits on I64 reported ok")
	}
	if s, _ := f.Tensor("scalar"); s.NumElements() != 1 {
		t.Errorf("scalar has %d elements", s.NumElements())
	}
	// No temporary files are left behind.
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries after Write, want 1", len(entries))
	}
}

// The header layout is what the reference implementation writes: compact
// JSON, __metadata__ first, space padding to a multiple of 8, and tensors in
// name order for a single dtype. Encoding is deterministic.
func TestEncodeLayout(t *testing.T) {
	must := mustFor(t)
	a := must(NewF32("b", []int{1}, []float32{2}))
	b := must(NewF32("a", []int{2}, []float32{0, 1}))
	c := must(NewBF16("c", []int{1}, []float32{1}))
	got, err := Encode([]Tensor{c, a, b}, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	header := `{"__metadata__":{"format":"pt"},` +
		`"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},` +
		`"c":{"dtype":"BF16","shape":[1],"data_offsets":[12,14]}}`
	for len(header)%8 != 0 {
		header += " "
	}
	want := rawFile(header, 0)
	want = append(want, 0, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 0x80, 0x3f)
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode =\n%q\nwant\n%q", got, want)
	}
	again, _ := Encode([]Tensor{a, b, c}, map[string]string{"format": "pt"})
	if !bytes.Equal(again, got) {
		t.Error("Encode depends on input order")
	}
}

func TestWriteRejects(t *testing.T) {
	must := mustFor(t)
	a := must(NewF32("a", []int{1}, []float32{1}))
	cases := []struct {
		tensors []Tensor
		want    string
	}{
		{[]Tensor{a, a}, `tensor "a" given twice`},
		{[]Tensor{{Name: "__metadata__", DType: F32, Shape: []int{0}}}, "reserved"},
		{[]Tensor{{Name: "x", DType: F32, Shape: []int{3}}}, `tensor "x": 0 bytes but shape [3] of F32 needs 12`},
		{[]Tensor{{Name: "x", DType: "F17", Shape: []int{}}}, `unknown dtype "F17"`},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "x.safetensors")
		err := Write(path, c.tensors, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), path+": ") {
			t.Errorf("Write: err = %v, want %q prefixed by the path", err, c.want)
		}
	}
	if _, err := NewF32("x", []int{2, 2}, []float32{1}); err == nil || !strings.Contains(err.Error(), "4 bytes but shape [2 2] of F32 needs 16") {
		t.Errorf("NewF32 with a short slice: err = %v", err)
	}
}

// Each malformed header gets its own one-line error naming the file and,
// where there is one, the tensor.
func TestParseRejects(t *testing.T) {
	entry := func(body string) string { return `{"t":` + body + `}` }
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "file is 3 bytes, shorter than the 8-byte header length"},
		{"absurd header", binary.LittleEndian.AppendUint64(nil, 1<<40), "header length 1099511627776 exceeds the 100000000-byte limit"},
		{"header past end", append(binary.LittleEndian.AppendUint64(nil, 100), "{}"...), "header length 100 runs past the end of the file (2 bytes"},
		{"not json", rawFile("hello", 0), "header is not a JSON object"},
		{"json array", rawFile("[1,2]", 0), "header is not a JSON object"},
		{"empty header", rawFile("", 0), "header is not a JSON object"},
		{"truncated json", rawFile(`{"t":{"dtype":"F32"`, 0), "header is not valid JSON"},
		{"trailing data", rawFile(`{} {}`, 0), "data after its JSON object"},
		{"duplicate name", rawFile(`{"t":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"t":{"dtype":"F32","shape":[],"data_offsets":[4,8]}}`, 8), `header names "t" twice`},
		{"unknown dtype", rawFile(entry(`{"dtype":"F24","shape":[1],"data_offsets":[0,3]}`), 3), `tensor "t": unknown dtype "F24"`},
		{"missing dtype", rawFile(entry(`{"shape":[1],"data_offsets":[0,4]}`), 4), `tensor "t": missing "dtype"`},
		{"missing shape", rawFile(entry(`{"dtype":"F32","data_offsets":[0,4]}`), 4), `tensor "t": missing "shape"`},
		{"negative dim", rawFile(entry(`{"dtype":"F32","shape":[2,-1],"data_offsets":[0,4]}`), 4), `tensor "t": shape [2 -1] has a negative dimension`},
		{"fractional dim", rawFile(entry(`{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}`), 4), `tensor "t": shape dimension 0 is 1.5, want an integer`},
		{"huge shape", rawFile(entry(`{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}`), 4), "more than 2^60 elements"},
		{"one offset", rawFile(entry(`{"dtype":"F32","shape":[1],"data_offsets":[4]}`), 4), `"data_offsets" must be [begin, end], got [4]`},
		{"negative offset", rawFile(entry(`{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}`), 4), `"data_offsets" must be two non-negative integers, got [-4,0]`},
		{"begin after end", rawFile(entry(`{"dtype":"F32","shape":[1],"data_offsets":[8,4]}`), 8), `"data_offsets" [8,4] has begin > end`},
		{"end past data", rawFile(entry(`{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`), 4), "data_offsets [0,8] end beyond the data section of 4 bytes (file truncated?)"},
		{"size mismatch", rawFile(`{"model.embed_tokens.weight":{"dtype":"F32","shape":[512,64],"data_offsets":[0,1024]}}`, 1024), `tensor "model.embed_tokens.weight": data_offsets [0,1024] but shape [512 64] of F32 needs 131072 bytes`},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, 12), `tensors "a" (data_offsets [0,8]) and "b" (data_offsets [4,12]) overlap`},
		{"metadata not map", rawFile(`{"__metadata__":{"n":1}}`, 0), "__metadata__ must be an object of string values"},
		{"metadata array", rawFile(`{"__metadata__":["x"]}`, 0), "__metadata__ must be an object of string values"},
		{"entry not object", rawFile(entry(`[1]`), 0), `tensor "t": want {"dtype","shape","data_offsets"}, got [1]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("model.safetensors", c.data)
			if err == nil {
				t.Fatalf("Parse accepted it, want error containing %q", c.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "model.safetensors: ") || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q\nwant one line starting with the file name and containing %q", msg, c.want)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	// Gaps between tensors, empty tensors sharing an offset, null metadata,
	// unknown entry fields and trailing space padding are all legal.
	hdr := `{"__metadata__":null,"a":{"dtype":"U8","shape":[2],"data_offsets":[4,6],"extra":1},` +
		`"e1":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},"e2":{"dtype":"BOOL","shape":[3,0],"data_offsets":[4,4]}}   `
	f, err := Parse("x", rawFile(hdr, 6))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Names(); !reflect.DeepEqual(got, []string{"a", "e1", "e2"}) {
		t.Errorf("Names = %v", got)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "nope.safetensors")); err == nil || !strings.Contains(err.Error(), "nope.safetensors") {
		t.Errorf("missing file: err = %v", err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: err = %v", err)
	}
	short := filepath.Join(dir, "short.safetensors")
	os.WriteFile(short, []byte{1, 0}, 0o644)
	if _, err := Open(short); err == nil || !strings.Contains(err.Error(), short+": file is 2 bytes") {
		t.Errorf("short file: err = %v", err)
	}
	bad := filepath.Join(dir, "bad.safetensors")
	os.WriteFile(bad, rawFile(`{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4), 0o644)
	if _, err := Open(bad); err == nil || !strings.HasPrefix(err.Error(), bad+`: tensor "t": data_offsets [0,8] end beyond`) {
		t.Errorf("truncated file: err = %v", err)
	}
}

// TestParseRejectsTrailingBytes: bytes after the last tensor's data were
// accepted silently; Hugging Face's safetensors refuses such a file
// (MetadataIncompleteBuffer), and so does Parse, with the counts.
func TestParseRejectsTrailingBytes(t *testing.T) {
	one := `{"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"after a tensor", rawFile(one, 7), "3 bytes after the last tensor's data (the tensors end at byte 4 of a 7-byte data section)"},
		{"no tensors", rawFile(`{}`, 5), "5 bytes after the last tensor's data"},
	} {
		_, err := Parse("model.safetensors", c.data)
		if err == nil || !strings.HasPrefix(err.Error(), "model.safetensors: ") || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "download or write it again") {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := Parse("model.safetensors", rawFile(one, 4)); err != nil {
		t.Errorf("exact file: %v", err)
	}
}
