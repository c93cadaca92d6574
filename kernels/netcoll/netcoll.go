// Package netcoll is kernels.Collective between processes over TCP, for
// backends whose buffers live in host memory (cpu replicas): the stand-in
// for NCCL where there is no GPU, as gloo is PyTorch's. Every device of
// the job is a rank (process rank × its devices + the device's index), so
// a sum is the same rank-order sum kernels/inproc makes in one process
// and every rank gets the same bits whatever the process count.
//
// The job's rank-0 process runs the Hub: an inproc.Group of every rank,
// its own devices joined directly, and for each device of another process
// a proxy that reads that device's calls from its TCP connection, makes
// them in the group on its behalf (through a cpu backend's host buffers)
// and writes back the result. A star, not a ring: rank 0 adds in rank
// order as inproc does, which is what keeps the bits fixed; the traffic
// through rank 0 is the price, fine for the cpu replicas this serves.
//
// The hub listens on a port of its own; its ID (the port and a random key
// that every connection must present) is what the rendezvous hands out
// in place of NCCL's unique id, and the others dial MASTER_ADDR at that
// port, as NCCL's id carries its root's address.
//
// Failures: a connection that closes without a goodbye (a process that
// died) aborts the group naming the rank; so does a rank that does not
// arrive within the timeout (inproc's timer) or a mismatched call; every
// rank's pending and later calls then fail with an error wrapping
// kernels.ErrCollectiveAborted. A process whose hub stops answering ends
// its calls after the timeout (plus a grace for the hub's own verdict,
// which names the missing rank).
package netcoll

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/grpo-dev/grpo/kernels"
)

// IDBytes is the size of an encoded ID: the rendezvous's id size.
const IDBytes = 128

// idMagic opens an encoded ID, so an NCCL id is not read as one.
var idMagic = [8]byte{'g', 'r', 'p', 'o', 'n', 'e', 't', 'c'}

// ID is what a rank needs to reach the hub: its port (on MASTER_ADDR) and
// the key the hub checks, so a stray connection is not taken for a rank.
type ID struct {
	Port uint16
	Key  [16]byte
}

// Bytes encodes id in the rendezvous's 128 bytes.
func (id ID) Bytes() [IDBytes]byte {
	var b [IDBytes]byte
	copy(b[:], idMagic[:])
	binary.BigEndian.PutUint16(b[8:], id.Port)
	copy(b[10:], id.Key[:])
	return b
}

// ParseID decodes an ID that Bytes encoded.
func ParseID(b [IDBytes]byte) (ID, error) {
	var id ID
	if [8]byte(b[:8]) != idMagic {
		return id, errors.New("netcoll: the rendezvous id is not a netcoll hub's (another backend's id? every node must run the same --devices backend)")
	}
	id.Port = binary.BigEndian.Uint16(b[8:])
	copy(id.Key[:], b[10:26])
	return id, nil
}

func newKey() ([16]byte, error) {
	var k [16]byte
	_, err := rand.Read(k[:])
	return k, err
}

// hello is a rank's first message to the hub.
type hello struct {
	Key        [16]byte
	Rank, Size int
}

// helloReply is the hub's answer: "" or why the rank was refused.
type helloReply struct{ Err string }

// request is one call a rank makes, as it travels to the hub.
type request struct {
	Op                 string // "all-reduce", "all-to-all", "counts", "barrier", "abort", "bye"
	Values             []float32
	RecvLen, Width     int
	DType              kernels.DType // all-to-all: the rows' dtype, F32 (the zero value) or BF16
	SendRows, RecvRows []int
	Counts             []int
	Reason             string // abort
}

// reply is the hub's answer to a call: its result or why it failed.
type reply struct {
	Err    string
	Values []float32
	Counts []int
}

// conn is a gob stream over a TCP connection.
type conn struct {
	c   net.Conn
	enc *gob.Encoder
	dec *gob.Decoder
}

func newConn(c net.Conn) *conn { return &conn{c: c, enc: gob.NewEncoder(c), dec: gob.NewDecoder(c)} }

// send writes v within d.
func (c *conn) send(v any, d time.Duration) error {
	c.c.SetWriteDeadline(time.Now().Add(d))
	return c.enc.Encode(v)
}

// recv reads into v within d (0: no deadline).
func (c *conn) recv(v any, d time.Duration) error {
	var t time.Time
	if d > 0 {
		t = time.Now().Add(d)
	}
	c.c.SetReadDeadline(t)
	return c.dec.Decode(v)
}

// aborted wraps reason as every failed call's error.
func aborted(reason error) error { return fmt.Errorf("%w: %w", kernels.ErrCollectiveAborted, reason) }
