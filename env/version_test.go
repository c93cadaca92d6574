package env

import (
	"strings"
	"testing"
)

func TestResolveVersion(t *testing.T) {
	two := Spec{ID: "game", Versions: []Version{
		{Name: "v1", About: "verifiers a60a606 taskset"},
		{Name: "v0", Hub: []string{"0.1.7"}, About: "verifiers 8d4b33247"},
	}}
	for _, c := range []struct{ given, want string }{
		{"", "v1"}, {"latest", "v1"}, {"v1", "v1"}, {"V0", "v0"}, {"0.1.7", "v0"}, {" v0 ", "v0"},
	} {
		got, err := resolveVersion(two, c.given)
		if err != nil || got != c.want {
			t.Errorf("resolveVersion(%q) = %q, %v; want %q", c.given, got, err, c.want)
		}
	}
	_, err := resolveVersion(two, "0.2.0")
	if err == nil || !strings.Contains(err.Error(), `"0.2.0"`) || !strings.Contains(err.Error(), "v1 (verifiers a60a606 taskset) or v0") {
		t.Errorf("unknown version: %v", err)
	}
	one := Spec{ID: "plain"}
	if got, err := resolveVersion(one, ""); err != nil || got != "" {
		t.Errorf("no versions, none given: %q, %v", got, err)
	}
	if _, err := resolveVersion(one, "v1"); err == nil || !strings.Contains(err.Error(), "remove the version key") {
		t.Errorf("no versions, one given: %v", err)
	}
	installed := Spec{ID: "me/x", Dir: "/envs/x"}
	if _, err := resolveVersion(installed, "0.3.1"); err == nil || !strings.Contains(err.Error(), "grpo env install owner/name@0.3.1") {
		t.Errorf("an installed env cannot honour a pin: %v", err)
	}
}

func TestNewPassesResolvedVersion(t *testing.T) {
	var seen string
	MustRegister(Spec{ID: "version-probe", Versions: []Version{{Name: "v1"}, {Name: "v0", Hub: []string{"0.1.3"}}},
		New: func(_ Args, o Options) (Environment, error) { seen = o.Version; return nil, nil }})
	for given, want := range map[string]string{"": "v1", "0.1.3": "v0"} {
		if _, err := New("version-probe", nil, WithVersion(given)); err != nil || seen != want {
			t.Errorf("New with version %q: Spec.New saw %q (%v); want %q", given, seen, err, want)
		}
	}
	if _, err := New("version-probe", nil, WithVersion("v9")); err == nil || !strings.HasPrefix(err.Error(), "env version-probe: version \"v9\"") {
		t.Errorf("unknown version: %v", err)
	}
}
