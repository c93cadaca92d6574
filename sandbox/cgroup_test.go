package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSelfCgroup(t *testing.T) {
	if p, err := selfCgroup("12:pids:/x\n0::/user.slice/grpo.scope\n"); err != nil || p != "/user.slice/grpo.scope" {
		t.Errorf("got %q %v", p, err)
	}
	if _, err := selfCgroup("4:memory:/x\n"); err == nil {
		t.Error("v1-only /proc/self/cgroup accepted")
	}
}

func TestUsableCgroup(t *testing.T) {
	dir := func(ctl string) string {
		d := t.TempDir()
		if ctl != "-" {
			os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte(ctl), 0o644)
		}
		return d
	}
	for _, c := range []struct{ ctl, want string }{
		{"-", "not a cgroup v2 directory"},
		{"cpu memory\n", "does not delegate the pids controller"},
		{"pids\n", "does not delegate the memory controller"},
		{"cpu io memory pids\n", ""},
	} {
		err := usableCgroup(dir(c.ctl))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("subtree_control %q: got %v, want %q", c.ctl, err, c.want)
		}
	}
	if _, err := cgroupDir(Config{Cgroup: "-"}); err == nil {
		t.Error(`Config.Cgroup "-" does not turn cgroups off`)
	}
}
