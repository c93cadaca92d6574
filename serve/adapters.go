package serve

import (
	"fmt"
	"sort"
	"sync"

	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// adapterRef is a loaded adapter shared by the requests that use it. An
// unloaded adapter is freed when its last request ends, so unloading never
// pulls the weights from under a running batch.
type adapterRef struct {
	name string
	path string
	ad   model.Adapter
	free func()

	mu       sync.Mutex
	refs     int
	unloaded bool
}

func (a *adapterRef) acquire() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.refs++
	a.mu.Unlock()
}

// release drops one request's hold; nil (the base model) is a no-op.
func (a *adapterRef) release() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.refs--
	last := a.refs == 0 && a.unloaded
	a.mu.Unlock()
	if last && a.free != nil {
		a.free()
	}
}

func (a *adapterRef) unload() {
	a.mu.Lock()
	a.unloaded = true
	last := a.refs == 0
	a.mu.Unlock()
	if last && a.free != nil {
		a.free()
	}
}

// adapters maps served names to loaded adapters.
type adapters struct {
	mu     sync.Mutex
	byName map[string]*adapterRef
}

// get returns name's adapter with a hold on it for one request.
func (as *adapters) get(name string) (*adapterRef, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	a, ok := as.byName[name]
	if ok {
		a.acquire()
	}
	return a, ok
}

func (as *adapters) names() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	var out []string
	for n := range as.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// loadAdapter builds a PEFT adapter for m from its checked files; it
// must run where m's backend may be used (the scheduler goroutine, or
// before it starts).
func loadAdapter(m *model.Model, name string, f *adapterFiles) (*adapterRef, error) {
	a, err := lora.FromBytes(f.dir, f.config, f.weights, m)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", name, err)
	}
	return &adapterRef{name: name, path: f.dir, ad: a, free: a.Free}, nil
}

// put installs a under its name; with replace false an existing name is
// an error (vLLM's load_inplace allows replacing).
func (as *adapters) put(a *adapterRef, replace bool) error {
	as.mu.Lock()
	old, exists := as.byName[a.name]
	if exists && !replace {
		as.mu.Unlock()
		return fmt.Errorf("the adapter %q is already loaded; unload it first or pass load_inplace", a.name)
	}
	as.byName[a.name] = a
	as.mu.Unlock()
	if exists {
		old.unload()
	}
	return nil
}

func (as *adapters) remove(name string) error {
	as.mu.Lock()
	a, ok := as.byName[name]
	delete(as.byName, name)
	as.mu.Unlock()
	if !ok {
		return fmt.Errorf("the adapter %q is not loaded", name)
	}
	a.unload()
	return nil
}
