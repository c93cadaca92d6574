package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeBwrap writes a bwrap that fails the way bwrap does in a container
// without user namespaces.
func fakeBwrap(t *testing.T) string {
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // the sandbox user runs it
	os.Chmod(dir, 0o755)
	p := filepath.Join(dir, "bwrap")
	script := "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces. See <https://deb.li/bubblewrap> or <file:///usr/share/doc/bubblewrap/README.Debian.gz>.' >&2\nexit 1\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRefusesWithoutNamespaces(t *testing.T) {
	cfg := Config{Bwrap: fakeBwrap(t)}
	_, poolErr := NewPool(cfg, 1)
	_, cmdErr := RunCommand(context.Background(), cfg, []string{"/bin/true"}, nil)
	for _, err := range []error{poolErr, cmdErr, Check(cfg)} {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("got %v, want ErrUnavailable", err)
		}
		msg := err.Error()
		for _, want := range []string{"No permissions to creating new namespace", "sysctl", "--privileged", "GRPO_SANDBOX=unsafe-no-isolation"} {
			if !strings.Contains(msg, want) {
				t.Errorf("refusal %q lacks %q", msg, want)
			}
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("refusal is not one line: %q", msg)
		}
	}
}

func TestModeValue(t *testing.T) {
	t.Setenv(modeEnv, "none")
	if _, err := NewPool(Config{}, 1); err == nil || !strings.Contains(err.Error(), unsafeMode) {
		t.Errorf("a misspelt GRPO_SANDBOX: %v", err)
	}
}

// Unsafe mode runs code without namespaces but still with a cleared
// environment, rlimits, its own work dir, and a warning in the log.
func TestUnsafeMode(t *testing.T) {
	t.Setenv(modeEnv, unsafeMode)
	t.Setenv("GRPO_SANDBOX_TEST_SECRET", "unsafe-secret")
	unsafeWarning = sync.Once{}
	var log []string
	cfg := hostileConfig()
	cfg.Bwrap = fakeBwrap(t) // never run: unsafe mode needs no bubblewrap
	cfg.Logf = func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
	p, err := NewPool(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if len(log) != 1 || !strings.Contains(log[0], "WITHOUT isolation") {
		t.Errorf("want one warning, got %q", log)
	}
	it := acquire(t, p)
	r := run(t, it, "import os, resource\nprint('GRPO_SANDBOX_TEST_SECRET' in os.environ, resource.getrlimit(resource.RLIMIT_AS)[0], os.getcwd() == os.environ['HOME'])")
	if r.Stdout != "False 268435456 True\n" {
		t.Errorf("unsafe mode: %+v", r)
	}
	c, err := RunCommand(context.Background(), cfg, []string{"/bin/sh", "-c", "echo $HOME"}, nil)
	if err != nil || !strings.Contains(c.Stdout, "grpo-sandbox-") {
		t.Errorf("unsafe command: %+v %v", c, err)
	}
}
