package env

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Spec describes an environment to the registry: how to name it, what
// args it takes and how to build it from validated args.
type Spec struct {
	// ID is the canonical id ("reverse-text", "my-org/my-env").
	ID string
	// Aliases are other ids that name the same environment.
	Aliases []string
	// Description is one line for `grpo env list`.
	Description string
	// Data says where the examples come from by default and which arg
	// selects other data; `grpo env show` prints it.
	Data string
	// RewardScale, when not 0, says that the environment's reward is the
	// reference implementation's (verifiers') weighted sum times this
	// factor, which keeps it in [0, 1]; the sub-metrics are unscaled.
	// `grpo env show` prints it, and `grpo env score` can undo it.
	RewardScale float64
	// Args are the arguments a config may pass; New gets them validated
	// with defaults filled in.
	Args []ArgSpec
	// New builds the environment; o carries the caller's settings (where
	// datasets come from), which New keeps for loading examples later.
	New func(args Args, o Options) (Environment, error)
	// Dir is the directory of an installed environment.toml environment,
	// "" for one registered from Go.
	Dir string
	// RawArgs passes a config's args to New as they are, unchecked: the
	// environment validates them itself (a Python environment's
	// load_environment does). Args is then empty.
	RawArgs bool
	// Versions are the behaviours a config may select with its version
	// key, the default first; New gets the chosen one's Name in
	// Options.Version. Empty for an environment with one behaviour.
	Versions []Version
}

// primePrefix is the owner of Prime Intellect's hub environments; a config
// that names "primeintellect/reverse-text" gets the builtin reverse-text.
const primePrefix = "primeintellect/"

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$`)

var registry = struct {
	sync.RWMutex
	specs map[string]*Spec // by canonical id and by alias
}{specs: map[string]*Spec{}}

// Register adds an environment written in Go. Its id and aliases must be
// new, its args well-formed and New set. Programs embedding grpo call it
// (usually from init) so that configs can name their environment.
func Register(s Spec) error {
	if !idPattern.MatchString(s.ID) {
		return fmt.Errorf("env: id %q is not valid; use letters, digits, '-', '_', '.', optionally owner/name", s.ID)
	}
	if s.New == nil {
		return fmt.Errorf("env %s: Spec.New is nil; give the function that builds the environment", s.ID)
	}
	seen := map[string]bool{}
	for _, a := range s.Args {
		if a.Name == "" || seen[a.Name] {
			return fmt.Errorf("env %s: arg name %q is empty or repeated", s.ID, a.Name)
		}
		seen[a.Name] = true
		if _, err := normalizeArg(a.Type, a.Default); err != nil {
			return fmt.Errorf("env %s: arg %q: default %v: %v", s.ID, a.Name, FormatValue(a.Default), err)
		}
	}
	registry.Lock()
	defer registry.Unlock()
	names := append([]string{s.ID}, s.Aliases...)
	for _, n := range names {
		if old, dup := registry.specs[FoldID(n)]; dup {
			return fmt.Errorf("env: id %q is already registered (by %s); choose another id", n, old.ID)
		}
	}
	sp := s
	for _, n := range names {
		registry.specs[FoldID(n)] = &sp
	}
	return nil
}

// MustRegister is Register for an environment package's init: a failure
// is a bug in that package.
func MustRegister(s Spec) {
	if err := Register(s); err != nil {
		panic(err)
	}
}

// FoldID folds the spellings that name one environment: case, and '_'
// for '-' (Prime's Python modules are reverse_text, their ids
// reverse-text). Two ids name one environment when they fold the same.
func FoldID(id string) string {
	return strings.ReplaceAll(strings.ToLower(id), "_", "-")
}

// ValidID reports whether id is spelled as an environment id may be:
// letters, digits, '-', '_', '.', optionally owner/name.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Registered finds an environment registered from Go (a builtin, or a
// program's own), by id or alias, without asking the finders.
func Registered(id string) (Spec, bool) {
	registry.RLock()
	defer registry.RUnlock()
	s, ok := registry.specs[FoldID(id)]
	if !ok {
		return Spec{}, false
	}
	return *s, true
}

// Lookup finds an environment by id or alias: one registered from Go (the
// builtins included; "primeintellect/X" names builtin X), else one a
// Finder resolves (an installed environment.toml directory, a Python
// module).
func Lookup(id string, opts ...Option) (Spec, bool) {
	s, err := find(id, Apply(opts...))
	return s, err == nil
}

func find(ref string, o Options) (Spec, error) {
	id, _ := SplitVersion(ref)
	registry.RLock()
	s, ok := registry.specs[FoldID(id)]
	if !ok && strings.HasPrefix(FoldID(id), primePrefix) {
		s, ok = registry.specs[FoldID(strings.TrimPrefix(FoldID(id), primePrefix))]
	}
	registry.RUnlock()
	if ok {
		return *s, nil
	}
	for _, f := range finders() {
		spec, err := f.Find(id, o)
		if err == nil {
			return spec, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return Spec{}, err
		}
	}
	if err := needsError(ref); err != nil {
		return Spec{}, err
	}
	var ids []string
	for _, s := range List() {
		ids = append(ids, s.ID)
	}
	return Spec{}, fmt.Errorf("env %q not found; known environments: %s; install a custom one with `grpo env install DIR`, or a verifiers one with `grpo env install owner/name`",
		id, strings.Join(ids, ", "))
}

// List returns every environment: those registered from Go sorted by id,
// then those the finders list (installed ones, sorted by id). An
// installed directory whose environment.toml does not parse is left out
// (New reports its error).
func List() []Spec {
	registry.RLock()
	byID := map[string]Spec{}
	for _, s := range registry.specs {
		byID[s.ID] = *s
	}
	registry.RUnlock()
	out := make([]Spec, 0, len(byID))
	for _, s := range byID {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	for _, f := range finders() {
		if f.List == nil {
			continue
		}
		for _, s := range f.List() {
			if _, taken := byID[s.ID]; !taken {
				out = append(out, s)
			}
		}
	}
	return out
}

// New builds environment id with args from a config (nil for none). Args
// are validated against the environment's ArgSpecs first. id may end in
// "@version" (the Lab's spelling of a pinned version), as WithVersion.
func New(id string, args map[string]any, opts ...Option) (Environment, error) {
	o := Apply(opts...)
	s, err := find(id, o)
	if err != nil {
		return nil, err
	}
	if o.Version, err = refVersion(id, o.Version); err != nil {
		return nil, fmt.Errorf("env %s: %w", s.ID, err)
	}
	if o.Version, err = resolveVersion(s, o.Version); err != nil {
		return nil, fmt.Errorf("env %s: %w", s.ID, err)
	}
	a := Args(args)
	if !s.RawArgs {
		if a, err = validateArgs(s.ID, s.Args, args); err != nil {
			return nil, err
		}
	}
	e, err := s.New(a, o)
	if err != nil {
		if strings.HasPrefix(err.Error(), "env "+s.ID+": ") {
			return nil, err // it names the environment already
		}
		return nil, fmt.Errorf("env %s: %w", s.ID, err)
	}
	return e, nil
}
