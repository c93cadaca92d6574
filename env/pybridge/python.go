package pybridge

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
)

// script is the bridge's Python side, run with `python -c` so that
// nothing has to be written to disk and no file can go stale.
//
//go:embed bridge.py
var script string

// FindPython returns the interpreter to run environments in: $GRPO_PYTHON
// (a path or a name on PATH), else python3 on PATH. The error says what to
// install or set, in one line.
func FindPython() (string, error) {
	if p := os.Getenv("GRPO_PYTHON"); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("GRPO_PYTHON=%s is not an executable python; point it at a python with verifiers installed (pip install verifiers), or unset it to use python3 from PATH", p)
		}
		return path, nil
	}
	path, err := exec.LookPath("python3")
	if err != nil {
		return "", fmt.Errorf("no python3 on PATH: install Python 3.10 or newer and then `python3 -m pip install verifiers`, or set GRPO_PYTHON to a python that has it")
	}
	return path, nil
}

// missingVerifiers is the one line for a python without verifiers.
func missingVerifiers(python string) string {
	return fmt.Sprintf("%s cannot import verifiers; install it with `%s -m pip install verifiers` (or set GRPO_PYTHON to a python that has it)", python, python)
}
