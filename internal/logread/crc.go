package logread

// crc computes a reflected CRC-32 bit by bit with the given polynomial,
// starting from crc (0 for a fresh checksum): slow and obviously right,
// unlike a table, and independent of hash/crc32 that the writers use.
func crc(poly, c uint32, b []byte) uint32 {
	c = ^c
	for _, x := range b {
		c ^= uint32(x)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ poly
			} else {
				c >>= 1
			}
		}
	}
	return ^c
}

// CRC-32C (Castagnoli), which TFRecord uses, and CRC-32 (IEEE 802.3,
// zlib.crc32), which W&B's .wandb log uses despite its docstring's "crc32c".
func crc32c(b []byte) uint32                 { return crc(0x82f63b78, 0, b) }
func crc32ieee(prev uint32, b []byte) uint32 { return crc(0xedb88320, prev, b) }
