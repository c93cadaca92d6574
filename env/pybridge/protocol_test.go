package pybridge

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDecodeResponse(t *testing.T) {
	r, err := decodeResponse([]byte(`{"id": 4, "ok": true, "result": {"done": true}}` + "\n"))
	if err != nil || *r.ID != 4 || !r.OK || string(r.Result) != `{"done": true}` {
		t.Errorf("ok response: %+v, %v", r, err)
	}
	r, err = decodeResponse([]byte(`{"id": 5, "ok": false, "kind": "env", "error": "KeyError: 'x'"}`))
	if err != nil || r.OK || r.Kind != KindEnv || r.Error != "KeyError: 'x'" {
		t.Errorf("error response: %+v, %v", r, err)
	}
	r, err = decodeResponse([]byte(`{"id": 6, "ok": false}`))
	if err != nil || r.Error == "" {
		t.Errorf("an error without a message gets one: %+v, %v", r, err)
	}
	// The child's complaint about a request line it could not parse.
	_, err = decodeResponse([]byte(`{"id": null, "ok": false, "kind": "protocol", "error": "bad request line"}`))
	var ce *ChildError
	if !errors.As(err, &ce) || ce.Kind != KindProtocol {
		t.Errorf("id-less error: %v", err)
	}
	for _, bad := range []string{"", "hello", "[1]", `{"ok": true}`, `{"id": "x"}`, `{"id": 1`} {
		if _, err := decodeResponse([]byte(bad)); err == nil {
			t.Errorf("%q decoded without error", bad)
		}
	}
}

// FuzzDecodeResponse: whatever the child writes, decoding neither panics
// nor yields a response without an id, and an accepted line re-encodes to
// one that decodes the same.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{
		`{"id": 1, "ok": true, "result": {"rows": [], "total": 0}}`,
		`{"id": 2, "ok": false, "kind": "env", "error": "boom"}`,
		`{"id": null, "ok": false, "error": "x"}`,
		`{"id": 3, "ok": true, "result": null}`,
		`{"id": 1e3}`, `{}`, `not json`, "{\"id\": 9, \"result\": \"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := decodeResponse(line)
		if err != nil {
			return
		}
		if r.ID == nil {
			t.Fatalf("accepted %q without an id", line)
		}
		if !r.OK && r.Error == "" {
			t.Fatalf("accepted a failure without a message: %q", line)
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", r, err)
		}
		r2, err := decodeResponse(again)
		if err != nil || *r2.ID != *r.ID || r2.OK != r.OK || r2.Error != r.Error || r2.Kind != r.Kind {
			t.Fatalf("round trip of %q: %+v vs %+v (%v)", line, r, r2, err)
		}
	})
}
