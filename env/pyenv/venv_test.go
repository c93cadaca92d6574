package pyenv

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
)

func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVenvCommand(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	if got := venvCommand("/usr/bin/python3", "/h/venv"); !reflect.DeepEqual(got, []string{"/usr/bin/python3", "-m", "venv", "/h/venv"}) {
		t.Errorf("without uv: %q", got)
	}
	uv := writeScript(t, bin, "uv", "exit 0")
	if got := venvCommand("/usr/bin/python3", "/h/venv"); !reflect.DeepEqual(got, []string{uv, "venv", "--python", "/usr/bin/python3", "/h/venv"}) {
		t.Errorf("with uv: %q", got)
	}
}

// A directory package is installed into grpo's own virtual environment,
// made on first use, and environments then run in its python.
func TestInstallDirectoryIntoOwnVenv(t *testing.T) {
	o := withStubVerifiers(t)
	pkg := filepath.Join(t.TempDir(), "my_env")
	os.MkdirAll(filepath.Join(pkg, "my_env"), 0o755)
	os.WriteFile(filepath.Join(pkg, "pyproject.toml"), []byte("[project]\nname = \"my-env\"\n"), 0o644)
	var ran [][]string
	runCommand = func(ctx context.Context, log io.Writer, argv []string) error {
		ran = append(ran, argv)
		if len(argv) > 2 && argv[len(argv)-2] == "venv" || argv[1] == "venv" { // the venv itself is made for real
			if err := runInstall(ctx, log, argv); err != nil {
				t.Skipf("this machine cannot make a virtual environment (%v); the commands are tested in TestVenvCommand", err)
			}
		}
		return nil // pip needs a package index: recorded only
	}
	t.Cleanup(func() { runCommand = runInstall })
	msg, err := Install(context.Background(), pkg, &bytes.Buffer{}, env.WithPython(o))
	venvPy := filepath.Join(os.Getenv("GRPO_HOME"), "venv", "bin", "python")
	if err != nil || msg != "installed "+pkg+" into "+venvPy+`; name it as id = "my-env"` {
		t.Fatalf("got %q, %v", msg, err)
	}
	if len(ran) != 2 || !reflect.DeepEqual(ran[1], pipCommand(venvPy, "install", "-e", pkg)) {
		t.Errorf("ran %q", ran)
	}
	if !isVenv(venvPy) {
		t.Errorf("%s is not a virtual environment's python", venvPy)
	}
	e := newPython(t, guessEnv, nil, o)
	if e.b.Python() != venvPy {
		t.Errorf("the environment runs in %s, want grpo's venv %s", e.b.Python(), venvPy)
	}
	// The venv exists now: a second install makes none.
	ran = nil
	if _, err := Install(context.Background(), pkg, &bytes.Buffer{}, env.WithPython(o)); err != nil || len(ran) != 1 {
		t.Errorf("second install ran %q, %v", ran, err)
	}
}

// A system interpreter is never installed into.
func TestInstallRefusesSystemPython(t *testing.T) {
	o := withStubVerifiers(t)
	py, _ := exec.LookPath("python3")
	if isVenv(py) {
		t.Skip("python3 on PATH is a virtual environment's here")
	}
	t.Setenv("GRPO_PYTHON", py)
	pkg := t.TempDir()
	os.WriteFile(filepath.Join(pkg, "pyproject.toml"), []byte("[project]\nname = \"x\"\n"), 0o644)
	_, err := Install(context.Background(), pkg, &bytes.Buffer{}, env.WithPython(o))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "GRPO_PYTHON="+py+" is not a virtual environment's python, and grpo installs into virtual environments only") {
		t.Errorf("got %v", err)
	}
}

// A python that cannot make a venv (no python3-venv) says what to install,
// and leaves no half-made venv behind.
func TestVenvCreationFails(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	writeScript(t, bin, "python3", "echo 'ensurepip is not available' >&2; exit 1")
	dir := filepath.Join(t.TempDir(), "venv")
	_, err := ensureVenv(context.Background(), dir, io.Discard)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "making grpo's virtual environment "+dir+" failed") || !strings.Contains(err.Error(), "apt install python3-venv") {
		t.Errorf("got %v", err)
	}
	if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
		t.Errorf("a half-made venv was left: %v", serr)
	}
}
