package env

import (
	"fmt"
	"strings"
)

// Version is one selectable behaviour of an environment. The Lab's
// environments were rewritten (verifiers' v1 tasksets) and changed their
// prompts and rewards; a builtin keeps the older behaviour selectable so
// that a run started before reproduces.
type Version struct {
	// Name is what a config's `version` key (or "id@version") gives:
	// "v1", "v0".
	Name string
	// Hub lists the Hub (pyproject) version strings that name this
	// behaviour and no other.
	Hub []string
	// About says in a few words what the behaviour follows, for
	// `grpo env show` and errors ("verifiers a60a606 taskset").
	About string
	// RewardScale, when not 0, replaces Spec.RewardScale for this
	// behaviour (1: its reward is verifiers' as it is).
	RewardScale float64
}

// ScaleOf is the RewardScale of the behaviour version names (a Versions
// name, a Hub string, or "" for the default): the version's own, else
// the Spec's. An unknown version gets the Spec's; New refuses it anyway.
func (s Spec) ScaleOf(version string) float64 {
	if name, err := resolveVersion(s, version); err == nil {
		for _, v := range s.Versions {
			if v.Name == name && v.RewardScale != 0 {
				return v.RewardScale
			}
		}
	}
	return s.RewardScale
}

// WithVersion selects the behaviour a config's `version` key names; ""
// selects the environment's default (its first Version).
func WithVersion(v string) Option { return func(x *Options) { x.Version = v } }

// resolveVersion maps a config's version to the canonical name of one of
// s's Versions ("" when s has none and none was given).
func resolveVersion(s Spec, given string) (string, error) {
	given = strings.TrimSpace(given)
	if len(s.Versions) == 0 {
		if given == "" {
			return "", nil
		}
		if s.Dir != "" || s.RawArgs {
			// grpo runs the installed copy and does not know its version,
			// so it cannot honour a pin.
			return "", fmt.Errorf("version %q given, but %s runs as installed; install that version (`grpo env install owner/name@%s`) and remove the version key", given, s.ID, given)
		}
		return "", fmt.Errorf("version %q given, but %s has one behaviour only; remove the version key", given, s.ID)
	}
	if given == "" || given == "latest" {
		return s.Versions[0].Name, nil
	}
	var names []string
	for _, v := range s.Versions {
		if strings.EqualFold(v.Name, given) {
			return v.Name, nil
		}
		for _, h := range v.Hub {
			if h == given {
				return v.Name, nil
			}
		}
		names = append(names, fmt.Sprintf("%s (%s)", v.Name, v.About))
	}
	return "", fmt.Errorf("version %q is not one %s has; use %s (the first is the default)", given, s.ID, strings.Join(names, " or "))
}

// SplitVersion splits the Lab's "owner/name@version" into the id and the
// version ("" when none is pinned).
func SplitVersion(ref string) (id, version string) {
	if i := strings.LastIndex(ref, "@"); i >= 0 {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

// refVersion is the version an "id@version" pins, or the option's; both
// given and different is an error rather than a silent choice.
func refVersion(ref, opt string) (string, error) {
	_, pinned := SplitVersion(ref)
	switch {
	case pinned == "":
		return opt, nil
	case opt == "" || opt == pinned:
		return pinned, nil
	}
	return "", fmt.Errorf("%q pins version %q but version %q is also given; keep one", ref, pinned, opt)
}
