package env

import (
	"errors"
	"sort"
	"sync"
)

// A Finder resolves ids that no Go code registered: environments
// installed as environment.toml directories, Python modules. Their
// packages add one from init (RegisterFinder), so that the registry
// knows them without importing them.
type Finder struct {
	// Order sorts the finders: the registry asks the lowest first.
	Order int
	// Find returns the spec of id, or an error wrapping ErrNotFound when
	// id names none of the finder's environments; any other error ends
	// the lookup with it.
	Find func(id string, o Options) (Spec, error)
	// List returns the finder's environments for List; nil lists none.
	List func() []Spec
}

// ErrNotFound is what a Finder returns for an id it does not know.
var ErrNotFound = errors.New("environment not found")

var finderList struct {
	sync.RWMutex
	fs []Finder
}

// RegisterFinder adds f to the finders Lookup, New and List ask.
func RegisterFinder(f Finder) {
	finderList.Lock()
	defer finderList.Unlock()
	finderList.fs = append(finderList.fs, f)
	sort.SliceStable(finderList.fs, func(i, j int) bool { return finderList.fs[i].Order < finderList.fs[j].Order })
}

func finders() []Finder {
	finderList.RLock()
	defer finderList.RUnlock()
	return append([]Finder(nil), finderList.fs...)
}
