package wandb

import (
	"bytes"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/logread"
)

// frame writes payloads through the log writer and splits them again with
// the independent reader.
func frame(t testing.TB, payloads [][]byte) [][]byte {
	var buf bytes.Buffer
	l, err := newLogWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range payloads {
		if err := l.write(p); err != nil {
			t.Fatal(err)
		}
	}
	if int64(buf.Len()) != l.off {
		t.Fatalf("offset %d, wrote %d", l.off, buf.Len())
	}
	got, err := logread.WandbLog(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestLogChunking covers every path of the framing: records that fit a
// block, ones split FIRST/LAST and FIRST/MIDDLE/LAST, one that leaves
// fewer than 7 bytes in its block (so the next starts after zero padding)
// and one that leaves exactly 7 (a FIRST chunk with no data).
func TestLogChunking(t *testing.T) {
	first := blockSize - 7 - chunkHeader // fills block 0 after the file header
	cases := map[string][]int{
		"small":             {1, 10, 100},
		"first-last":        {40000},
		"first-middle-last": {100000},
		"pad":               {first - 3, 50},
		"empty-first":       {first - chunkHeader, 20},
		"exact":             {first, 1},
		"empty record":      {0, 5},
	}
	for name, sizes := range cases {
		var in [][]byte
		for i, n := range sizes {
			in = append(in, bytes.Repeat([]byte{byte('a' + i)}, n))
		}
		got := frame(t, in)
		if len(got) != len(in) {
			t.Fatalf("%s: %d records back, want %d", name, len(got), len(in))
		}
		for i := range in {
			if !bytes.Equal(got[i], in[i]) {
				t.Errorf("%s: record %d differs (len %d, want %d)", name, i, len(got[i]), len(in[i]))
			}
		}
	}
}

func TestLogCorruptionIsCaught(t *testing.T) {
	var buf bytes.Buffer
	l, _ := newLogWriter(&buf)
	l.write([]byte(strings.Repeat("metrics ", 5000)))
	good := buf.Bytes()
	for _, off := range []int{3, 7, 12, 20, len(good) / 2, len(good) - 1} {
		bad := append([]byte(nil), good...)
		bad[off] ^= 1
		if _, err := logread.WandbLog(bad); err == nil {
			t.Errorf("byte %d flipped: no error", off)
		}
	}
}

func FuzzLogRoundTrip(f *testing.F) {
	f.Add([]byte("x"), 3, 40000)
	f.Add([]byte{}, 0, 32754)
	f.Fuzz(func(t *testing.T, seed []byte, n1, n2 int) {
		n1, n2 = n1&0x1ffff, n2&0x1ffff
		a := bytes.Repeat(append(seed, 1), n1/(len(seed)+1)+1)[:n1]
		b := bytes.Repeat(append(seed, 2), n2/(len(seed)+1)+1)[:n2]
		got := frame(t, [][]byte{seed, a, b})
		if len(got) != 3 || !bytes.Equal(got[0], seed) || !bytes.Equal(got[1], a) || !bytes.Equal(got[2], b) {
			t.Fatalf("round trip of %d/%d/%d bytes failed", len(seed), n1, n2)
		}
	})
}
