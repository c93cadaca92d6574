// Package protoenc appends protocol-buffer wire format by hand: the
// TensorBoard Event and W&B Record messages the run directory writes need
// varints, fixed 32/64-bit numbers and length-delimited fields, and nothing
// else, so a code generator and the protobuf runtime would only add weight.
package protoenc

import (
	"encoding/binary"
	"math"
)

// Wire types (protobuf encoding spec).
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// Buffer accumulates one message's fields in field order as appended.
type Buffer struct{ b []byte }

// Bytes is the encoded message.
func (e *Buffer) Bytes() []byte { return e.b }

func (e *Buffer) tag(field, wire int) {
	e.b = binary.AppendUvarint(e.b, uint64(field)<<3|uint64(wire))
}

// Int64 appends a varint field (int64, int32, bool, enum). proto3 leaves
// a zero out, so a zero is not written.
func (e *Buffer) Int64(field int, v int64) {
	if v == 0 {
		return
	}
	e.tag(field, wireVarint)
	e.b = binary.AppendUvarint(e.b, uint64(v)) // negative int64 is ten bytes, as protobuf does
}

// Bool appends a bool field (omitted when false).
func (e *Buffer) Bool(field int, v bool) {
	if v {
		e.Int64(field, 1)
	}
}

// Double appends a double field (fixed64), omitted when exactly 0.
func (e *Buffer) Double(field int, v float64) {
	if v == 0 && !math.Signbit(v) {
		return
	}
	e.tag(field, wireFixed64)
	e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v))
}

// Float appends a float field (fixed32). It is always written, because a
// TensorBoard scalar of 0 is still a point on the curve.
func (e *Buffer) Float(field int, v float32) {
	e.tag(field, wireFixed32)
	e.b = binary.LittleEndian.AppendUint32(e.b, math.Float32bits(v))
}

// String appends a string field, omitted when empty.
func (e *Buffer) String(field int, s string) {
	if s == "" {
		return
	}
	e.tag(field, wireBytes)
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

// Message appends an embedded message. It is written even when empty:
// for a oneof member (W&B's Record.header, Record.final) presence is the
// information.
func (e *Buffer) Message(field int, m *Buffer) {
	e.tag(field, wireBytes)
	e.b = binary.AppendUvarint(e.b, uint64(len(m.b)))
	e.b = append(e.b, m.b...)
}

// Element appends one element of a repeated string field; unlike String
// it writes an empty string too, since each element counts.
func (e *Buffer) Element(field int, s string) {
	e.tag(field, wireBytes)
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}
