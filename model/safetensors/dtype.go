package safetensors

import "fmt"

// DType is a safetensors element type, spelled as in the header ("F32").
type DType string

// The dtypes the safetensors specification defines. All of them are accepted
// when reading a header (so a file with an extra I64 tensor still opens);
// only F32, F16 and BF16 convert to float32.
const (
	F64     DType = "F64"
	F32     DType = "F32"
	F16     DType = "F16"
	BF16    DType = "BF16"
	F8E4M3  DType = "F8_E4M3"
	F8E5M2  DType = "F8_E5M2"
	I64     DType = "I64"
	I32     DType = "I32"
	I16     DType = "I16"
	I8      DType = "I8"
	U64     DType = "U64"
	U32     DType = "U32"
	U16     DType = "U16"
	U8      DType = "U8"
	Bool    DType = "BOOL"
	invalid DType = ""
)

var dtypeSizes = map[DType]int{
	F64: 8, F32: 4, F16: 2, BF16: 2, F8E4M3: 1, F8E5M2: 1,
	I64: 8, I32: 4, I16: 2, I8: 1, U64: 8, U32: 4, U16: 2, U8: 1, Bool: 1,
}

// Size is the number of bytes of one element, or 0 for an unknown dtype.
func (d DType) Size() int { return dtypeSizes[d] }

// Valid reports whether d is one of the dtypes the specification defines.
func (d DType) Valid() bool { return d.Size() > 0 }

// IsFloat reports whether Float32s can convert tensors of this dtype.
func (d DType) IsFloat() bool { return d == F32 || d == F16 || d == BF16 }

func parseDType(s string) (DType, error) {
	d := DType(s)
	if !d.Valid() {
		return invalid, fmt.Errorf("unknown dtype %q (want one of F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, I32, I16, I8, U64, U32, U16, U8, BOOL)", s)
	}
	return d, nil
}
