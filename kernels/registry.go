package kernels

import (
	"fmt"
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

// Open constructs the named backend.
func Open(name string) (Backend, error) {
	registryMu.Lock()
	open, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("backend %q is not available in this build; available: %s (the cuda backend needs a binary built with -tags cuda)", name, strings.Join(Available(), ", "))
	}
	return open()
}
