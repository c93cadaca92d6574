package kernels

import (
	"fmt"
	"time"
)

// groups are the backends whose devices of one process reduce through
// their own collective (cuda: one NCCL communicator per device, from one
// unique id) rather than kernels/inproc's host-memory one.
var groups = map[string]func(bes []Backend, timeout time.Duration) ([]Collective, error){}

// RegisterGroup makes join the way devices of backend name, all opened in
// this process, form a collective: join returns one Collective per
// backend, rank i for bes[i].
func RegisterGroup(name string, join func(bes []Backend, timeout time.Duration) ([]Collective, error)) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := groups[name]; dup {
		panic("kernels: group collective registered twice: " + name)
	}
	groups[name] = join
}

// JoinGroup forms bes' collective through their backend's registered
// group (NCCL for cuda devices); ok is false when the backend has none
// (cpu, emu: kernels/inproc is theirs). The backends must be of one kind.
func JoinGroup(bes []Backend, timeout time.Duration) (_ []Collective, ok bool, err error) {
	if len(bes) == 0 {
		return nil, false, nil
	}
	name := bes[0].Name()
	for _, be := range bes[1:] {
		if be.Name() != name {
			return nil, true, fmt.Errorf("a group of %s and %s devices: a run's devices are all of one backend", name, be.Name())
		}
	}
	registryMu.Lock()
	join, ok := groups[name]
	registryMu.Unlock()
	if !ok {
		return nil, false, nil
	}
	cs, err := join(bes, timeout)
	return cs, true, err
}
