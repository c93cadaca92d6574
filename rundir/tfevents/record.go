package tfevents

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is TFRecord's checksum: CRC-32C, rotated right by 15 bits and
// offset, so that a CRC stored inside checksummed data does not checksum
// to a fixed point (tensorflow/core/lib/hash/crc32c.h Mask).
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

// writeRecord frames data as one TFRecord: the length as a little-endian
// uint64, the masked CRC of those 8 bytes, the data, the masked CRC of the
// data. It is written with one Write so a crash leaves at most one torn
// record at the end, which readers report as a truncated file.
func writeRecord(w io.Writer, data []byte) error {
	buf := make([]byte, 0, 16+len(data))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(data)))
	buf = binary.LittleEndian.AppendUint32(buf, maskedCRC(buf[:8]))
	buf = append(buf, data...)
	buf = binary.LittleEndian.AppendUint32(buf, maskedCRC(data))
	_, err := w.Write(buf)
	return err
}
