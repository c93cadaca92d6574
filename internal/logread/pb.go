package logread

import (
	"errors"
	"fmt"
)

// field is one decoded protobuf field: for wire type 0 the varint in num,
// for 1 and 5 the raw little-endian bits in num, for 2 the bytes.
type field struct {
	num   int
	wire  int
	u     uint64
	bytes []byte
}

// fields splits a message into its fields, checking the wire format.
func fields(b []byte) ([]field, error) {
	var out []field
	for len(b) > 0 {
		key, n := uvarint(b)
		if n <= 0 {
			return nil, errors.New("bad field key")
		}
		b = b[n:]
		f := field{num: int(key >> 3), wire: int(key & 7)}
		if f.num == 0 {
			return nil, errors.New("field number 0")
		}
		switch f.wire {
		case 0:
			f.u, n = uvarint(b)
			if n <= 0 {
				return nil, errors.New("bad varint")
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return nil, errors.New("short fixed64")
			}
			for i := 7; i >= 0; i-- {
				f.u = f.u<<8 | uint64(b[i])
			}
			b = b[8:]
		case 5:
			if len(b) < 4 {
				return nil, errors.New("short fixed32")
			}
			f.u = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24
			b = b[4:]
		case 2:
			l, n := uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return nil, errors.New("bad length-delimited field")
			}
			f.bytes = b[n : n+int(l)]
			b = b[n+int(l):]
		default:
			return nil, fmt.Errorf("unsupported wire type %d", f.wire)
		}
		out = append(out, f)
	}
	return out, nil
}

// uvarint is base-128 little-endian, at most ten bytes.
func uvarint(b []byte) (uint64, int) {
	var x uint64
	for i := 0; i < len(b) && i < 10; i++ {
		x |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return x, i + 1
		}
	}
	return 0, -1
}
