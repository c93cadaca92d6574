package kernels

import (
	"strings"
	"testing"
	"time"
)

// rankOnly is a Collective that knows its rank, size and backend.
type rankOnly struct {
	Collective
	rank, size int
	be         Backend
}

func (r rankOnly) Rank() int { return r.rank }
func (r rankOnly) Size() int { return r.size }

func init() {
	RegisterGroup("grouped", func(bes []Backend, at *GroupAt, _ time.Duration) ([]Collective, error) {
		if at == nil {
			at = &GroupAt{Size: len(bes)}
		}
		cs := make([]Collective, len(bes))
		for i, be := range bes {
			cs[i] = rankOnly{rank: at.First + i, size: at.Size, be: be}
		}
		return cs, nil
	}, func() ([]byte, error) { return []byte("grouped id"), nil })
}

// TestJoinGroup: devices of a backend with a registered group (cuda:
// NCCL) get its collective, rank i on device i; a backend without one
// (cpu) is left to kernels/inproc (ok false); devices of two backends are
// refused.
func TestJoinGroup(t *testing.T) {
	bes := []Backend{namedBackend{name: "grouped"}, namedBackend{name: "grouped"}, namedBackend{name: "grouped"}}
	cs, ok, err := JoinGroup(bes, time.Second)
	if !ok || err != nil || len(cs) != 3 {
		t.Fatalf("grouped: %d collectives, ok %v, %v", len(cs), ok, err)
	}
	for i, c := range cs {
		if r := c.(rankOnly); r.rank != i || r.size != 3 || r.be != bes[i] {
			t.Errorf("collective %d: rank %d of %d on another backend", i, r.rank, r.size)
		}
	}
	if _, ok, err := JoinGroup([]Backend{namedBackend{name: "cpu"}, namedBackend{name: "cpu"}}, time.Second); ok || err != nil {
		t.Errorf("cpu: ok %v, %v; want no group of its own", ok, err)
	}
	_, _, err = JoinGroup([]Backend{bes[0], namedBackend{name: "cpu"}}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "a group of grouped and cpu devices") {
		t.Errorf("mixed: %v", err)
	}
}

// TestJoinGroupAt: a process's devices placed in a group spanning
// processes are ranks First… of Size; a placement past the group's size
// is refused; the backend's id maker is found by name, none for cpu.
func TestJoinGroupAt(t *testing.T) {
	bes := []Backend{namedBackend{name: "grouped"}, namedBackend{name: "grouped"}}
	id, ok, err := NewGroupID("grouped")
	if !ok || err != nil || string(id) != "grouped id" {
		t.Fatalf("NewGroupID: %q, ok %v, %v", id, ok, err)
	}
	if _, ok, _ := NewGroupID("cpu"); ok {
		t.Error("cpu has a group id maker")
	}
	cs, ok, err := JoinGroupAt(bes, &GroupAt{ID: id, First: 4, Size: 6}, time.Second)
	if !ok || err != nil {
		t.Fatalf("ok %v, %v", ok, err)
	}
	for i, c := range cs {
		if c.Rank() != 4+i || c.Size() != 6 {
			t.Errorf("device %d: rank %d of %d, want %d of 6", i, c.Rank(), c.Size(), 4+i)
		}
	}
	if _, _, err := JoinGroupAt(bes, &GroupAt{ID: id, First: 5, Size: 6}, time.Second); err == nil || !strings.Contains(err.Error(), "devices 5 to 6 of a group of 6") {
		t.Errorf("past the group: %v", err)
	}
}
