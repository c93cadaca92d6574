package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
)

func decode(b []byte, max int) (map[byte][]byte, error) {
	return readFrame(bufio.NewReader(bytes.NewReader(b)), max)
}

func TestFrameRoundTrip(t *testing.T) {
	in := []field{{tagStdout, []byte("2\n")}, {tagStderr, nil}, {tagValue, []byte{0, 0xff, 'x'}}, {tagCount, []byte("7")}}
	got, err := decode(appendFrame(nil, in...), 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range in {
		if !bytes.Equal(got[f.tag], f.data) {
			t.Errorf("field %q: got %q, want %q", f.tag, got[f.tag], f.data)
		}
	}
	if len(got) != len(in) {
		t.Errorf("got %d fields, want %d", len(got), len(in))
	}
}

func TestFrameRejects(t *testing.T) {
	good := appendFrame(nil, field{tagStdout, []byte("hello")})
	cases := map[string]struct {
		b    []byte
		want error
	}{
		"bad magic":      {append([]byte("GRP2"), good[4:]...), errFrame},
		"over the bound": {good, errFrame}, // decoded with max 4 below
		"field overruns": {appendFrame(nil, field{tagStdout, []byte("hello")})[:8+5], io.ErrUnexpectedEOF},
		"duplicate tag":  {appendFrame(nil, field{tagStdout, nil}, field{tagStdout, nil}), errFrame},
		"stray bytes":    {append([]byte(frameMagic+"\x00\x00\x00\x03"), "abc"...), errFrame},
		"empty frame":    {appendFrame(nil), nil},
		"empty input":    {nil, io.EOF},
	}
	for name, c := range cases {
		max := 1 << 10
		if name == "over the bound" {
			max = 4
		}
		_, err := decode(c.b, max)
		if !errors.Is(err, c.want) && !(c.want == nil && err == nil) {
			t.Errorf("%s: got %v, want %v", name, err, c.want)
		}
	}
	// A field whose claimed length runs past the body.
	body := []byte{tagStdout, 0, 0, 0, 9, 'a'}
	frame := append([]byte(frameMagic), 0, 0, 0, byte(len(body)))
	if _, err := decode(append(frame, body...), 1<<10); !errors.Is(err, errFrame) {
		t.Errorf("overlong field: got %v", err)
	}
}

// FuzzReadFrame: whatever the sandbox writes, the decoder returns fields or
// an error — no panic, no allocation past its bound — and what it accepts
// re-encodes to a frame it decodes the same way.
func FuzzReadFrame(f *testing.F) {
	f.Add(appendFrame(nil, field{tagStdout, []byte("2\n")}, field{tagCount, []byte("1")}))
	f.Add(appendFrame(nil))
	f.Add([]byte("GRP1\xff\xff\xff\xff"))
	f.Add([]byte("GRP1\x00\x00\x00\x06o\x00\x00\x00\x09a"))
	f.Add(appendFrame(nil, field{tagError, nil}, field{tagError, nil}))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decode(b, 1<<12)
		if err != nil {
			return
		}
		tags := make([]byte, 0, len(got))
		for tag := range got {
			tags = append(tags, tag)
		}
		slices.Sort(tags)
		var fields []field
		for _, tag := range tags {
			fields = append(fields, field{tag, got[tag]})
		}
		again, err := decode(appendFrame(nil, fields...), 1<<12)
		if err != nil {
			t.Fatalf("re-encoded frame rejected: %v", err)
		}
		if len(again) != len(got) {
			t.Fatalf("round trip: %d fields, want %d", len(again), len(got))
		}
		for tag, data := range got {
			if !bytes.Equal(again[tag], data) {
				t.Fatalf("round trip of %q: %q, want %q", tag, again[tag], data)
			}
		}
	})
}
