package pybridge

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
)

// The bridge's Python side, run with `python -c` so that nothing has to be
// written to disk and no file can go stale: v0 environments (legacy.py),
// v1 tasksets (taskset.py) and the protocol (bridge.py, which defines the
// helpers the other two call and runs the loop, so it comes last).
var (
	//go:embed legacy.py
	legacyPy string
	//go:embed taskset.py
	tasksetPy string
	//go:embed bridge.py
	bridgePy string

	script = legacyPy + "\n\n" + tasksetPy + "\n\n" + bridgePy
)

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

// MissingModule is the one line for an environment whose import of module
// failed in python: the module is to be installed there, by hand or by
// `grpo env install`, which installs the environment's dependencies.
func MissingModule(python, module string) string {
	return fmt.Sprintf("the environment needs Python module %s, which %s cannot import; install it with `%s -m pip install %s`, or install the environment (with its dependencies) with `grpo env install`", module, python, python, module)
}
