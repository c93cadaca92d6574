package safetensors

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse. It must never panic, and any file
// it accepts must convert without panicking and survive Encode → Parse with
// the same tensors and metadata.
func FuzzParse(f *testing.F) {
	valid, err := Encode([]Tensor{
		must(NewF32("model.norm.weight", []int{2}, []float32{1, 2})),
		must(NewBF16("lm_head.weight", []int{2, 2}, []float32{1, -1, 0.5, 3})),
		must(NewF16("h", []int{1}, []float32{0.25})),
	}, map[string]string{"format": "pt"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-3])                                      // truncated data
	f.Add(valid[:12])                                                // truncated header
	f.Add([]byte{})                                                  // empty
	f.Add(binary.LittleEndian.AppendUint64(nil, ^uint64(0)))         // absurd header length
	f.Add(bytes.Replace(valid, []byte("[0,8]"), []byte("[0,9]"), 1)) // size mismatch
	f.Add(bytes.Replace(valid, []byte(`"F32"`), []byte(`"F31"`), 1)) // unknown dtype
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, 12))
	f.Add(rawFile(`{"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4))
	f.Add(rawFile(`{"__metadata__":{"a":["b"]}}`, 0))
	f.Add(rawFile(`{"t":{"dtype":"U8","shape":[],"data_offsets":[1,2]}}`, 2))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz", data)
		if err != nil {
			return
		}
		var ts []Tensor
		for _, name := range file.Names() {
			tensor, _ := file.Tensor(name)
			if tensor.DType.IsFloat() {
				v, err := tensor.Float32s()
				if err != nil || len(v) != tensor.NumElements() {
					t.Fatalf("tensor %q: Float32s = %d values, %v; want %d", name, len(v), err, tensor.NumElements())
				}
			}
			tensor.BF16Bits()
			ts = append(ts, tensor)
		}
		enc, err := Encode(ts, file.Metadata())
		if err != nil {
			t.Fatalf("Encode of an accepted file: %v", err)
		}
		back, err := Parse("re-encoded", enc)
		if err != nil {
			t.Fatalf("Parse of re-encoded file: %v", err)
		}
		if !reflect.DeepEqual(back.Names(), file.Names()) || len(back.Metadata()) != len(file.Metadata()) {
			t.Fatalf("re-encoded names %v metadata %v, want %v %v", back.Names(), back.Metadata(), file.Names(), file.Metadata())
		}
		for _, tensor := range ts {
			b, _ := back.Tensor(tensor.Name)
			if b.DType != tensor.DType || !reflect.DeepEqual(b.Shape, tensor.Shape) || !bytes.Equal(b.Bytes(), tensor.Bytes()) {
				t.Fatalf("tensor %q changed across Encode/Parse", tensor.Name)
			}
		}
	})
}

func must(t Tensor, err error) Tensor {
	if err != nil {
		panic(err) // only on a bug in a literal seed above
	}
	return t
}
