package wandb

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// The .wandb transaction log is LevelDB's log format with a W&B file
// header (wandb/sdk/internal/datastore.py, core/pkg/leveldb/record.go):
//
//	header := ":W&B" magic:uint16=0xBEE1 version:uint8=0   (7 bytes, file start)
//	block  := chunk* zero-padding?                         (32 KiB, counted from file start)
//	chunk  := crc:uint32 length:uint16 type:uint8 data      (little-endian)
//
// A record that does not fit in what is left of a block is split into
// FIRST, MIDDLE…, LAST chunks; a block with fewer than 7 bytes left is
// padded with zeros. The checksum is zlib's CRC-32 (IEEE, not CRC-32C as
// datastore.py's docstring says) of the type byte followed by the data,
// not masked: datastore.py seeds zlib.crc32 with crc32(chr(type)), and
// wandb-core's reader checks CRC-32 IEEE over buf[i-1:j], type byte first.
const (
	blockSize   = 32 * 1024
	chunkHeader = 7

	chunkFull   = 1
	chunkFirst  = 2
	chunkMiddle = 3
	chunkLast   = 4

	headerIdent   = ":W&B"
	headerMagic   = 0xBEE1
	headerVersion = 0
)

// logWriter frames records into the .wandb log.
type logWriter struct {
	w   io.Writer
	off int64 // bytes written so far, header included
}

// newLogWriter writes the W&B file header and returns the framer.
func newLogWriter(w io.Writer) (*logWriter, error) {
	h := make([]byte, 0, 7)
	h = append(h, headerIdent...)
	h = binary.LittleEndian.AppendUint16(h, headerMagic)
	h = append(h, headerVersion)
	if _, err := w.Write(h); err != nil {
		return nil, err
	}
	return &logWriter{w: w, off: int64(len(h))}, nil
}

// write appends one record, chunked across blocks as datastore.py's
// _write_data does, as a single Write.
func (l *logWriter) write(data []byte) error {
	var out []byte
	off := l.off
	first := true
	for {
		left := blockSize - int(off%blockSize)
		if left < chunkHeader {
			out = append(out, make([]byte, left)...)
			off += int64(left)
			left = blockSize
		}
		room := left - chunkHeader
		n, typ := len(data), byte(chunkFull)
		switch {
		case n <= room && first:
		case n <= room:
			typ = chunkLast
		case first:
			n, typ = room, chunkFirst
		default:
			n, typ = room, chunkMiddle
		}
		out = appendChunk(out, typ, data[:n])
		off += int64(chunkHeader + n)
		data = data[n:]
		first = false
		if typ == chunkFull || typ == chunkLast {
			break
		}
	}
	if _, err := l.w.Write(out); err != nil {
		return err
	}
	l.off = off
	return nil
}

func appendChunk(out []byte, typ byte, data []byte) []byte {
	c := crc32.Update(crc32.ChecksumIEEE([]byte{typ}), crc32.IEEETable, data)
	out = binary.LittleEndian.AppendUint32(out, c)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(data)))
	out = append(out, typ)
	return append(out, data...)
}
