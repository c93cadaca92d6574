package pyenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/grpo-dev/grpo/env/custom"
	"github.com/grpo-dev/grpo/env/pybridge"
)

// Python environments run in grpo's own virtual environment, which
// `grpo env install` makes and installs into: never into a system
// interpreter, whose packages belong to the system (and which PEP 668
// marks as externally managed, so pip refuses it anyway).

// VenvDir is grpo's virtual environment: $GRPO_HOME/venv (~/.grpo/venv).
func VenvDir() string { return filepath.Join(custom.Home(), "venv") }

func venvPython(dir string) string { return filepath.Join(dir, "bin", "python") }

// runtimeOptions picks the python environments run in: o's, else
// $GRPO_PYTHON (pybridge.FindPython's rule), else grpo's virtual
// environment once it exists, else python3 from PATH.
func runtimeOptions(o pybridge.Options) pybridge.Options {
	if o.Python == "" && os.Getenv("GRPO_PYTHON") == "" {
		if p := venvPython(VenvDir()); fileExists(p) {
			o.Python = p
		}
	}
	return o
}

// runCommand runs one install step (a venv's creation, pip), its output
// streamed to log; a variable so that tests can see the commands without
// a package index.
var runCommand = runInstall

// installPython is the python Install installs into: o's when set (a Go
// caller's choice), else $GRPO_PYTHON when it is a virtual environment's,
// else grpo's virtual environment, made first if need be.
func installPython(ctx context.Context, o pybridge.Options, log io.Writer) (string, error) {
	if o.Python != "" {
		return o.Python, nil
	}
	if p := os.Getenv("GRPO_PYTHON"); p != "" {
		path, err := pybridge.FindPython()
		if err != nil {
			return "", err
		}
		if !isVenv(path) {
			return "", fmt.Errorf("GRPO_PYTHON=%s is not a virtual environment's python, and grpo installs into virtual environments only: unset GRPO_PYTHON to use grpo's own (%s), or point it at a virtual environment's bin/python", p, VenvDir())
		}
		return path, nil
	}
	return ensureVenv(ctx, VenvDir(), log)
}

const venvProbe = `import sys; sys.exit(0 if sys.prefix != sys.base_prefix else 1)`

// isVenv reports whether python runs in a virtual environment.
func isVenv(python string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, python, "-c", venvProbe).Run() == nil
}

// ensureVenv makes the virtual environment dir unless it has a python,
// from python3 on PATH, and returns its python.
func ensureVenv(ctx context.Context, dir string, log io.Writer) (string, error) {
	py := venvPython(dir)
	if fileExists(py) {
		return py, nil
	}
	base, err := exec.LookPath("python3")
	if err != nil {
		return "", errors.New("no python3 on PATH: install Python 3.10 or newer; grpo makes its virtual environment from it")
	}
	_, statErr := os.Stat(dir)
	if err := runCommand(ctx, log, venvCommand(base, dir)); err != nil {
		if os.IsNotExist(statErr) {
			os.RemoveAll(dir) // a half-made venv would pass for one next time
		}
		return "", fmt.Errorf("making grpo's virtual environment %s failed: %v; install uv, or your system's venv package (Debian/Ubuntu: apt install python3-venv), or set GRPO_PYTHON to a virtual environment's python", dir, err)
	}
	if !fileExists(py) {
		return "", fmt.Errorf("making grpo's virtual environment %s left no %s; remove the directory and try again", dir, py)
	}
	return py, nil
}

// venvCommand makes a virtual environment: uv's when uv is on PATH (as
// verifiers' tooling uses uv; pipCommand then installs with uv pip), else
// the standard library's venv, which seeds pip.
func venvCommand(base, dir string) []string {
	if uv, err := exec.LookPath("uv"); err == nil {
		return []string{uv, "venv", "--python", base, dir}
	}
	return []string{base, "-m", "venv", dir}
}
