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
	RegisterGroup("grouped", func(bes []Backend, _ time.Duration) ([]Collective, error) {
		cs := make([]Collective, len(bes))
		for i, be := range bes {
			cs[i] = rankOnly{rank: i, size: len(bes), be: be}
		}
		return cs, nil
	})
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
