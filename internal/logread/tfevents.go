package logread

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
)

// Event is the part of a TensorBoard Event proto the tests check.
type Event struct {
	WallTime    float64
	Step        int64
	FileVersion string
	// Scalars are the Summary's simple_value values by tag.
	Scalars map[string]float32
	// SessionStart is set for a SessionLog with status START.
	SessionStart bool
}

// ReadEvents decodes an events file: TFRecords (uint64 length, masked
// CRC-32C of the length, data, masked CRC-32C of the data) of Event
// protos. A bad checksum or a torn record is an error.
func ReadEvents(path string) ([]Event, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Event
	for off := 0; off < len(b); {
		if len(b)-off < 12 {
			return nil, fmt.Errorf("%s: torn record header at %d", path, off)
		}
		n := binary.LittleEndian.Uint64(b[off:])
		if binary.LittleEndian.Uint32(b[off+8:]) != mask(crc32c(b[off:off+8])) {
			return nil, fmt.Errorf("%s: length checksum mismatch at %d", path, off)
		}
		off += 12
		if uint64(len(b)-off) < n+4 {
			return nil, fmt.Errorf("%s: torn record at %d", path, off)
		}
		data := b[off : off+int(n)]
		off += int(n)
		if binary.LittleEndian.Uint32(b[off:]) != mask(crc32c(data)) {
			return nil, fmt.Errorf("%s: data checksum mismatch at %d", path, off)
		}
		off += 4
		ev, err := decodeEvent(data)
		if err != nil {
			return nil, fmt.Errorf("%s: event %d: %w", path, len(out), err)
		}
		out = append(out, ev)
	}
	return out, nil
}

func mask(c uint32) uint32 { return (c>>15 | c<<17) + 0xa282ead8 }

func decodeEvent(b []byte) (Event, error) {
	ev := Event{Scalars: map[string]float32{}}
	fs, err := fields(b)
	if err != nil {
		return ev, err
	}
	for _, f := range fs {
		switch {
		case f.num == 1 && f.wire == 1:
			ev.WallTime = math.Float64frombits(f.u)
		case f.num == 2 && f.wire == 0:
			ev.Step = int64(f.u)
		case f.num == 3 && f.wire == 2:
			ev.FileVersion = string(f.bytes)
		case f.num == 5 && f.wire == 2:
			if err := decodeSummary(f.bytes, ev.Scalars); err != nil {
				return ev, err
			}
		case f.num == 6 && f.wire == 2:
			sl, err := fields(f.bytes)
			if err != nil {
				return ev, err
			}
			for _, s := range sl {
				ev.SessionStart = ev.SessionStart || (s.num == 1 && s.wire == 0 && s.u == 1)
			}
		default:
			return ev, fmt.Errorf("unexpected Event field %d (wire %d)", f.num, f.wire)
		}
	}
	return ev, nil
}

func decodeSummary(b []byte, into map[string]float32) error {
	fs, err := fields(b)
	if err != nil {
		return err
	}
	for _, f := range fs {
		if f.num != 1 || f.wire != 2 {
			return fmt.Errorf("unexpected Summary field %d", f.num)
		}
		vs, err := fields(f.bytes)
		if err != nil {
			return err
		}
		tag, val, haveVal := "", float32(0), false
		for _, v := range vs {
			switch {
			case v.num == 1 && v.wire == 2:
				tag = string(v.bytes)
			case v.num == 2 && v.wire == 5:
				val, haveVal = math.Float32frombits(uint32(v.u)), true
			default:
				return fmt.Errorf("unexpected Summary.Value field %d", v.num)
			}
		}
		if tag == "" || !haveVal {
			return errors.New("Summary.Value without tag or simple_value")
		}
		into[tag] = val
	}
	return nil
}
