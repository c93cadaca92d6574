package sandbox

import (
	"slices"
	"testing"
)

// Each mutant plants one weakness in the sandbox; the hostile case aimed at
// it must then fail. A suite that still passed would prove nothing about
// the real configuration.

// replaceArg rewrites bwrap's argument list: every occurrence of old
// becomes the arguments in with.
func replaceArg(old string, with ...string) func([]string) []string {
	return func(a []string) []string {
		var out []string
		for _, s := range a {
			if s == old {
				out = append(out, with...)
			} else {
				out = append(out, s)
			}
		}
		return out
	}
}

// dropPrlimit cuts prlimit and its options from the command line, so the
// program runs without rlimits.
func dropPrlimit(a []string) []string {
	i := slices.Index(a, "/usr/bin/prlimit")
	if i < 0 {
		return a
	}
	j := i + slices.Index(a[i:], "--")
	return append(slices.Clone(a[:i]), a[j+1:]...)
}

func TestHostileSuiteCatchesWeakSandboxes(t *testing.T) {
	requireSandbox(t, hostileConfig())
	w := newWorld(t)
	mutants := []struct {
		name string
		m    mutation
		kase string
	}{
		{"network shared", mutation{args: replaceArg("--unshare-all", "--unshare-all", "--share-net")}, "opening a socket"},
		{"environment inherited", mutation{args: replaceArg("--clearenv"), inheritEnv: true}, "reading secrets"},
		{"host /var visible", mutation{args: replaceArg("--proc", "--ro-bind", "/var", "/var", "--proc")}, "reading secrets"},
		// After /tmp's tmpfs is mounted, which would hide the bind otherwise.
		{"host dir writable", mutation{args: replaceArg("--chdir", "--bind", w.hostDir, w.hostDir, "--chdir")}, "writing outside the sandbox"},
		// Without a pid namespace the double-forked sleeper is a host process
		// that outlives the episode; killLeftovers ends it by pid below.
		{"no pid namespace", mutation{args: replaceArg("--unshare-all", "--unshare-user", "--unshare-ipc", "--unshare-net", "--unshare-uts", "--unshare-cgroup")}, "setsid and double-fork children"},
		{"no rlimits", mutation{args: dropPrlimit}, "limits"},
	}
	for _, mu := range mutants {
		t.Run(mu.name, func(t *testing.T) {
			defer killLeftovers(t)
			i := slices.IndexFunc(hostileCases, func(c hostileCase) bool { return c.name == mu.kase })
			if i < 0 {
				t.Fatalf("no hostile case %q", mu.kase)
			}
			cfg := hostileConfig()
			cfg.mutate = &mu.m
			err := runHostile(cfg, w, hostileCases[i])
			if err == nil {
				t.Fatalf("case %q passed against a sandbox with %s", mu.kase, mu.name)
			}
			t.Logf("caught: %v", err)
		})
	}
}
