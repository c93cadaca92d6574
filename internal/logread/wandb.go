package logread

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
)

// WandbRecord is the part of a W&B Record proto (wandb_internal.proto)
// the tests check.
type WandbRecord struct {
	Num int64
	// Kind names the record_type oneof member: "header", "run",
	// "history", "summary", "config", "files", "exit", "final", or
	// "field N" for another.
	Kind string
	// Items are the history/summary/config items, key → value_json; for
	// a run record, the config's.
	Items map[string]string
	// Step is HistoryRecord.step.num.
	Step int64
	// Run record fields.
	RunID, Entity, Project, Group, DisplayName string
	Tags                                       []string
	StartingStep                               int64
	Resumed                                    bool
	// Files are a files record's paths; ExitCode a run exit record's.
	Files    []string
	ExitCode int64
}

// ReadWandb decodes a .wandb file into its records.
func ReadWandb(path string) ([]WandbRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	raw, err := WandbLog(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]WandbRecord, 0, len(raw))
	for i, rec := range raw {
		r, err := decodeWandbRecord(rec)
		if err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", path, i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// WandbLog splits a .wandb file into its records' bytes: the ":W&B"
// 0xBEE1 version-0 header, then LevelDB log blocks of 32 KiB (counted
// from the file start) whose chunks carry CRC-32 (IEEE) of type byte +
// data, reassembled from FULL or FIRST, MIDDLE*, LAST chunks.
func WandbLog(b []byte) ([][]byte, error) {
	if len(b) < 7 || string(b[:4]) != ":W&B" || binary.LittleEndian.Uint16(b[4:]) != 0xBEE1 || b[6] != 0 {
		return nil, fmt.Errorf("not a W&B version-0 log header")
	}
	const block = 32768
	var out [][]byte
	var rec []byte
	inRecord := false
	for off := 7; off < len(b); {
		if left := block - off%block; left < 7 {
			for _, z := range b[off:min(off+left, len(b))] {
				if z != 0 {
					return nil, fmt.Errorf("non-zero block padding at %d", off)
				}
			}
			off += left
			continue
		}
		if len(b)-off < 7 {
			return nil, fmt.Errorf("torn chunk header at %d", off)
		}
		sum := binary.LittleEndian.Uint32(b[off:])
		n := int(binary.LittleEndian.Uint16(b[off+4:]))
		typ := b[off+6]
		if off%block+7+n > block || off+7+n > len(b) {
			return nil, fmt.Errorf("chunk at %d overruns its block or the file", off)
		}
		data := b[off+7 : off+7+n]
		if crc32ieee(crc32ieee(0, []byte{typ}), data) != sum {
			return nil, fmt.Errorf("chunk checksum mismatch at %d", off)
		}
		off += 7 + n
		switch {
		case typ == 1 && !inRecord:
			out = append(out, append([]byte(nil), data...))
		case typ == 2 && !inRecord:
			rec, inRecord = append([]byte(nil), data...), true
		case typ == 3 && inRecord:
			rec = append(rec, data...)
		case typ == 4 && inRecord:
			out, inRecord = append(out, append(rec, data...)), false
		default:
			return nil, fmt.Errorf("chunk type %d out of order at %d", typ, off)
		}
	}
	if inRecord {
		return nil, fmt.Errorf("the last record is incomplete")
	}
	return out, nil
}

var recordKinds = map[int]string{2: "history", 3: "summary", 5: "config", 6: "files", 17: "run", 18: "exit", 20: "final", 21: "header"}

func decodeWandbRecord(b []byte) (WandbRecord, error) {
	r := WandbRecord{Items: map[string]string{}}
	fs, err := fields(b)
	if err != nil {
		return r, err
	}
	for _, f := range fs {
		if f.num == 1 && f.wire == 0 {
			r.Num = int64(f.u)
			continue
		}
		if f.wire != 2 {
			return r, fmt.Errorf("unexpected Record field %d (wire %d)", f.num, f.wire)
		}
		if r.Kind != "" {
			return r, fmt.Errorf("two record types (%s and field %d)", r.Kind, f.num)
		}
		r.Kind = recordKinds[f.num]
		if r.Kind == "" {
			r.Kind = "field " + strconv.Itoa(f.num)
		}
		body, err := fields(f.bytes)
		if err != nil {
			return r, err
		}
		if err := r.decodeBody(body); err != nil {
			return r, fmt.Errorf("%s: %w", r.Kind, err)
		}
	}
	if r.Kind == "" {
		return r, fmt.Errorf("record %d has no record type", r.Num)
	}
	return r, nil
}

func (r *WandbRecord) decodeBody(body []field) error {
	for _, f := range body {
		var err error
		switch r.Kind {
		case "history", "summary", "config":
			switch {
			case f.num == 1 && f.wire == 2:
				err = decodeItem(f.bytes, r.Items)
			case r.Kind == "history" && f.num == 2 && f.wire == 2:
				var st []field
				if st, err = fields(f.bytes); err == nil && len(st) == 1 && st[0].num == 1 {
					r.Step = int64(st[0].u)
				}
			}
		case "run":
			err = r.decodeRunField(f)
		case "files":
			if f.num == 1 && f.wire == 2 {
				var it []field
				if it, err = fields(f.bytes); err == nil {
					for _, x := range it {
						if x.num == 1 && x.wire == 2 {
							r.Files = append(r.Files, string(x.bytes))
						}
					}
				}
			}
		case "exit":
			if f.num == 1 && f.wire == 0 {
				r.ExitCode = int64(int32(f.u))
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *WandbRecord) decodeRunField(f field) error {
	s := string(f.bytes)
	switch f.num {
	case 1:
		r.RunID = s
	case 2:
		r.Entity = s
	case 3:
		r.Project = s
	case 4:
		cfg, err := fields(f.bytes)
		if err != nil {
			return err
		}
		for _, c := range cfg {
			if c.num == 1 && c.wire == 2 {
				if err := decodeItem(c.bytes, r.Items); err != nil {
					return err
				}
			}
		}
	case 6:
		r.Group = s
	case 8:
		r.DisplayName = s
	case 10:
		r.Tags = append(r.Tags, s)
	case 14:
		r.StartingStep = int64(f.u)
	case 18:
		r.Resumed = f.u != 0
	}
	return nil
}

// decodeItem reads a HistoryItem/SummaryItem/ConfigItem: key = 1,
// value_json = 16.
func decodeItem(b []byte, into map[string]string) error {
	fs, err := fields(b)
	if err != nil {
		return err
	}
	key, val := "", ""
	for _, f := range fs {
		switch {
		case f.num == 1 && f.wire == 2:
			key = string(f.bytes)
		case f.num == 16 && f.wire == 2:
			val = string(f.bytes)
		default:
			return fmt.Errorf("unexpected item field %d", f.num)
		}
	}
	if key == "" || val == "" {
		return fmt.Errorf("item without key or value_json")
	}
	into[key] = val
	return nil
}
