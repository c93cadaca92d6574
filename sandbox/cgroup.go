package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cgroup v2 gives what rlimits cannot: one memory bound for a sandbox's
// processes together (tmpfs pages included) and a pids bound that holds for
// root too. It needs a delegated subtree: a directory with memory and pids
// enabled in cgroup.subtree_control that grpo may create children in. grpo
// never moves itself or enables controllers on its own cgroup (that would
// reshape the machine's hierarchy under the user); without one it logs why
// and relies on rlimits.

type cgroupBase struct{ dir string }

const cgroup2Magic = 0x63677270 // CGROUP2_SUPER_MAGIC

// cgroupFor returns the cgroup base for cfg, logging once per reason when
// there is none.
func cgroupFor(cfg Config) *cgroupBase {
	dir, err := cgroupDir(cfg)
	if err == nil {
		err = usableCgroup(dir)
	}
	if err != nil {
		if _, seen := cgroupLogged.LoadOrStore(err.Error(), true); !seen && cfg.Cgroup != "-" {
			cfg.Logf("cgroup v2 limits skipped: %v; memory is bounded per process (AddressSpace) and processes by RLIMIT_NPROC", err)
		}
		return nil
	}
	return &cgroupBase{dir: dir}
}

var cgroupLogged sync.Map

// cgroupReason repeats why cgroup limits are off, for describe.
func cgroupReason(cfg Config) string {
	dir, err := cgroupDir(cfg)
	if err == nil {
		err = usableCgroup(dir)
	}
	if err == nil {
		return "available"
	}
	return err.Error()
}

// cgroupDir picks the directory to create sandbox cgroups in: Config.Cgroup,
// else GRPO_SANDBOX_CGROUP, else this process's own cgroup.
func cgroupDir(cfg Config) (string, error) {
	switch dir := cfg.Cgroup; {
	case dir == "-":
		return "", errors.New("turned off by Config.Cgroup")
	case dir != "":
		return dir, nil
	}
	if dir := os.Getenv("GRPO_SANDBOX_CGROUP"); dir != "" {
		return dir, nil
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err != nil || st.Type != cgroup2Magic {
		return "", errors.New("/sys/fs/cgroup is not a cgroup v2 (unified) mount")
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	rel, err := selfCgroup(string(self))
	if err != nil {
		return "", err
	}
	return filepath.Join("/sys/fs/cgroup", rel), nil
}

// selfCgroup finds the unified-hierarchy path in /proc/self/cgroup's text.
func selfCgroup(text string) (string, error) {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return rest, nil
		}
	}
	return "", errors.New("/proc/self/cgroup has no cgroup v2 entry")
}

// usableCgroup says whether sandboxes can get child cgroups of dir with
// memory and pids limits.
func usableCgroup(dir string) error {
	ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("%s is not a cgroup v2 directory: %v", dir, err)
	}
	have := strings.Fields(string(ctl))
	for _, want := range []string{"memory", "pids"} {
		if !contains(have, want) {
			return fmt.Errorf("%s does not delegate the %s controller (cgroup.subtree_control: %q); set GRPO_SANDBOX_CGROUP to a delegated directory, e.g. from systemd-run --user -p Delegate=yes", dir, want, strings.TrimSpace(string(ctl)))
		}
	}
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return fmt.Errorf("%s is not writable: %v", dir, err)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sandboxCgroup is one sandbox's cgroup, open so that clone3 can start bwrap
// inside it (SysProcAttr.CgroupFD): no moment runs outside the limits.
type sandboxCgroup struct {
	dir string
	fd  *os.File
}

func (b *cgroupBase) create(cfg Config) (*sandboxCgroup, error) {
	dir := filepath.Join(b.dir, fmt.Sprintf("grpo-sandbox-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: cgroup: %v", err)
	}
	limits := []struct{ file, value string }{
		{"memory.max", strconv.FormatInt(cfg.Memory, 10)},
		{"memory.swap.max", "0"},
		{"pids.max", strconv.Itoa(cfg.Procs + 4)}, // + bwrap, its reaper, prlimit's moment
	}
	for _, lim := range limits {
		err := os.WriteFile(filepath.Join(dir, lim.file), []byte(lim.value), 0)
		if err != nil && !(lim.file == "memory.swap.max" && errors.Is(err, os.ErrNotExist)) {
			os.Remove(dir)
			return nil, fmt.Errorf("sandbox: cgroup %s: %v", lim.file, err)
		}
	}
	fd, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("sandbox: cgroup: %v", err)
	}
	return &sandboxCgroup{dir: dir, fd: fd}, nil
}

// remove kills whatever is left in the cgroup and deletes it; the kernel
// needs a moment to empty a killed cgroup before rmdir succeeds.
func (g *sandboxCgroup) remove() {
	g.fd.Close()
	os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
	for i := 0; i < 50; i++ {
		if err := os.Remove(g.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}
