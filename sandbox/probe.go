package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// ErrUnavailable is wrapped by every error that means "this machine cannot
// sandbox model code": no bubblewrap, or bubblewrap cannot create namespaces.
var ErrUnavailable = errors.New("sandbox unavailable")

const (
	modeEnv    = "GRPO_SANDBOX"
	unsafeMode = "unsafe-no-isolation"
)

// unsafeOptIn reports whether the user opted out of isolation, and warns once per
// process when they did: the opt-out must never be silent.
func unsafeOptIn(logf func(string, ...any)) (bool, error) {
	switch v := os.Getenv(modeEnv); v {
	case "", "bwrap":
		return false, nil
	case unsafeMode:
		unsafeWarning.Do(func() {
			logf("WARNING: %s=%s: model-written code runs WITHOUT isolation — it can read your files, use the network and leave processes behind; only rlimits, a cleared environment and timeouts apply", modeEnv, unsafeMode)
		})
		return true, nil
	default:
		return false, fmt.Errorf("sandbox: %s=%q: want %q (default) or %q", modeEnv, v, "bwrap", unsafeMode)
	}
}

var unsafeWarning sync.Once

func defaultLogf(format string, args ...any) { log.Printf("sandbox: "+format, args...) }

// probes caches one availability check per bubblewrap argument prefix: the
// answer does not change while the process runs, and a probe costs a sandbox
// start.
var probes sync.Map // string -> *probe

type probe struct {
	once sync.Once
	err  error
}

// check starts one sandbox running /bin/true with the real flags and turns a
// failure into the single line a user needs.
func (l launcher) check() error {
	if l.unsafe {
		return nil
	}
	key := strings.Join(l.bwrapArgs([]string{"/bin/true"}), "\x00")
	v, _ := probes.LoadOrStore(key, &probe{})
	p := v.(*probe)
	p.once.Do(func() { p.err = l.probe() })
	return p.err
}

func (l launcher) probe() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.bwrap, l.bwrapArgs([]string{"/bin/true"})...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	l.prepare(cmd)
	err := cmd.Run()
	if err == nil {
		return nil
	}
	why := strings.TrimSpace(stderr.String())
	if why == "" {
		why = err.Error()
	}
	if i := strings.IndexByte(why, '\n'); i >= 0 {
		why = why[:i]
	}
	return fmt.Errorf("%w: bubblewrap cannot create namespaces here (%s); allow unprivileged user namespaces (sysctl -w kernel.unprivileged_userns_clone=1 user.max_user_namespaces=16384; on Ubuntu 23.10+ also kernel.apparmor_restrict_unprivileged_userns=0; in Docker or Podman run with --privileged, or --security-opt seccomp=unconfined --security-opt apparmor=unconfined), or set %s=%s to run model code without isolation", ErrUnavailable, why, modeEnv, unsafeMode)
}

// Check reports whether sandboxes with cfg can run here, with the reason and
// the remedy when they cannot (errors.Is(err, ErrUnavailable)).
func Check(cfg Config) error {
	l, err := newLauncher(cfg)
	if err != nil {
		return err
	}
	return l.check()
}
