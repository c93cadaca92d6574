package kernels

import (
	"fmt"
	"time"
)

// GroupAt places a process's devices in a group that spans processes:
// ID is the group's id, made once on the job's rank 0 (NewGroupID) and
// handed to every process; the process's devices are ranks First,
// First+1, … of Size. A nil GroupAt is a group of this process's devices
// alone, which makes its own id.
type GroupAt struct {
	ID          []byte
	First, Size int
}

// groupBackend is how a backend's devices form a group.
type groupBackend struct {
	join  func(bes []Backend, at *GroupAt, timeout time.Duration) ([]Collective, error)
	newID func() ([]byte, error)
}

// groups are the backends whose devices reduce through their own
// collective (cuda: one NCCL communicator per device, from one unique id)
// rather than kernels/inproc's host-memory one (or, across processes,
// kernels/netcoll's).
var groups = map[string]groupBackend{}

// RegisterGroup makes join the way devices of backend name, opened in
// this process, form a collective — rank at.First+i for bes[i] (rank i
// of len(bes) when at is nil) — and newID the way the job's rank 0 makes
// the id of a group spanning processes (ncclGetUniqueId).
func RegisterGroup(name string, join func(bes []Backend, at *GroupAt, timeout time.Duration) ([]Collective, error), newID func() ([]byte, error)) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := groups[name]; dup {
		panic("kernels: group collective registered twice: " + name)
	}
	groups[name] = groupBackend{join: join, newID: newID}
}

// NewGroupID makes the id of a group of backend name's devices that spans
// processes; ok is false when the backend has no group of its own (cpu,
// emu: kernels/netcoll is theirs across processes).
func NewGroupID(name string) (id []byte, ok bool, err error) {
	registryMu.Lock()
	g, ok := groups[name]
	registryMu.Unlock()
	if !ok {
		return nil, false, nil
	}
	id, err = g.newID()
	return id, true, err
}

// JoinGroup forms bes' collective through their backend's registered
// group (NCCL for cuda devices); ok is false when the backend has none
// (cpu, emu: kernels/inproc is theirs). The backends must be of one kind.
func JoinGroup(bes []Backend, timeout time.Duration) (_ []Collective, ok bool, err error) {
	return JoinGroupAt(bes, nil, timeout)
}

// JoinGroupAt is JoinGroup for devices that are ranks at.First… of a
// group spanning processes (at nil: this process's devices alone).
func JoinGroupAt(bes []Backend, at *GroupAt, timeout time.Duration) (_ []Collective, ok bool, err error) {
	if len(bes) == 0 {
		return nil, false, nil
	}
	name := bes[0].Name()
	for _, be := range bes[1:] {
		if be.Name() != name {
			return nil, true, fmt.Errorf("a group of %s and %s devices: a run's devices are all of one backend", name, be.Name())
		}
	}
	if at != nil && (at.First < 0 || at.First+len(bes) > at.Size) {
		return nil, true, fmt.Errorf("devices %d to %d of a group of %d", at.First, at.First+len(bes)-1, at.Size)
	}
	registryMu.Lock()
	g, ok := groups[name]
	registryMu.Unlock()
	if !ok {
		return nil, false, nil
	}
	cs, err := g.join(bes, at, timeout)
	return cs, true, err
}
