package sandbox

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The control channel between Go and the REPL server carries frames:
//
//	"GRP1" | body length (uint32, big endian) | body
//	body = field*, field = tag (1 byte) | length (uint32, big endian) | data
//
// Lengths make binary output and any bytes in code safe to carry, and a
// bound on the body lets the decoder refuse a frame before allocating it: the
// server runs untrusted code, which can write to the channel, so a frame is
// input from the sandbox like any other.

const frameMagic = "GRP1"

// Field tags. Requests carry tagCode; replies carry the rest.
const (
	tagCode      = 'c' // request: the cell's source
	tagReady     = 'r' // reply: the interpreter has started (data: "")
	tagStdout    = 'o'
	tagStderr    = 'e'
	tagError     = 'x' // traceback, or why the cell could not run
	tagValue     = 'v' // repr of the cell's trailing expression
	tagCount     = 'n' // execution count, decimal
	tagTruncated = 't' // which of "o" and "e" were cut to MaxOutput
)

var errFrame = errors.New("malformed frame")

// field is one tag and its data.
type field struct {
	tag  byte
	data []byte
}

// appendFrame encodes fields as one frame.
func appendFrame(dst []byte, fields ...field) []byte {
	n := 0
	for _, f := range fields {
		n += 5 + len(f.data)
	}
	dst = append(dst, frameMagic...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	for _, f := range fields {
		dst = append(dst, f.tag)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(f.data)))
		dst = append(dst, f.data...)
	}
	return dst
}

// readFrame reads one frame of at most max body bytes and splits it into
// fields; a tag may appear once. Errors wrap errFrame, except those of r
// (io.EOF before the first byte, io.ErrUnexpectedEOF inside a frame, deadlines).
func readFrame(r *bufio.Reader, max int) (map[byte][]byte, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	if string(hdr[:4]) != frameMagic {
		return nil, fmt.Errorf("%w: bad magic %q", errFrame, hdr[:4])
	}
	n := binary.BigEndian.Uint32(hdr[4:])
	if uint64(n) > uint64(max) {
		return nil, fmt.Errorf("%w: body of %d bytes exceeds %d", errFrame, n, max)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return splitFields(body)
}

// splitFields parses a frame body; the returned slices alias body.
func splitFields(body []byte) (map[byte][]byte, error) {
	fields := map[byte][]byte{}
	for len(body) > 0 {
		if len(body) < 5 {
			return nil, fmt.Errorf("%w: %d stray bytes after the last field", errFrame, len(body))
		}
		tag, n := body[0], binary.BigEndian.Uint32(body[1:5])
		body = body[5:]
		if uint64(n) > uint64(len(body)) {
			return nil, fmt.Errorf("%w: field %q claims %d bytes, %d left", errFrame, tag, n, len(body))
		}
		if _, dup := fields[tag]; dup {
			return nil, fmt.Errorf("%w: field %q twice", errFrame, tag)
		}
		fields[tag] = body[:n:n]
		body = body[n:]
	}
	return fields, nil
}
