package kernels

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
)

// Backends register themselves (in their package init) so that programs
// pick one by name — "cpu", "cuda", "emu" — without importing cgo code they
// did not ask for.
var (
	registryMu sync.Mutex
	registry   = map[string]func() (Backend, error){}
)

// Register makes a backend constructor available to Open under name.
func Register(name string, open func() (Backend, error)) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("kernels: backend registered twice: " + name)
	}
	registry[name] = open
}

// Available lists the registered backend names, sorted.
func Available() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var names []string
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open constructs the named backend; "cuda:3" (a name with an index) opens
// that device (OpenDevice).
func Open(name string) (Backend, error) {
	if _, _, indexed := strings.Cut(name, ":"); indexed {
		ids, err := ParseDevices(name)
		if err != nil {
			return nil, err
		}
		if len(ids) != 1 {
			return nil, fmt.Errorf("%q names %d devices; open one at a time", name, len(ids))
		}
		return OpenDevice(ids[0])
	}
	registryMu.Lock()
	open, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("backend %q is not available in this build; available: %s (the cuda backend needs a binary built with -tags cuda)", name, strings.Join(Available(), ", "))
	}
	return open()
}

// indexed are the backends that open a device other than their first
// (cuda: the driver's ordinal among the visible devices).
var indexed = map[string]func(index int) (Backend, error){}

// RegisterIndexed makes a constructor of device index of backend name
// available to OpenDevice (Register's constructor opens index 0).
func RegisterIndexed(name string, open func(index int) (Backend, error)) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := indexed[name]; dup {
		panic("kernels: indexed backend registered twice: " + name)
	}
	indexed[name] = open
}

// OpenDevice opens one device of a run: index 0 as Open does, another
// index through the backend's indexed constructor; the indices of cpu
// name replicas, each an independent CPU backend.
func OpenDevice(id DeviceID) (Backend, error) {
	if id.Index == 0 || id.Backend == "cpu" {
		return Open(id.Backend)
	}
	registryMu.Lock()
	open, ok := indexed[id.Backend]
	registryMu.Unlock()
	if !ok {
		if _, err := Open(id.Backend); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("backend %q opens only its first device; %s is not available", id.Backend, id)
	}
	if err := CheckDeviceCount([]DeviceID{id}, -1, os.LookupEnv); err != nil {
		return nil, err
	}
	return open(id.Index)
}
