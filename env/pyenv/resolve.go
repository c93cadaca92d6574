package pyenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/pybridge"
)

// A config names a verifiers environment the way the Lab does: by the id
// of an installed package ("owner/name" from the Environments Hub, or
// "name"), whose module is name with '-' as '_', or by a path: a module
// file ("./envs/my_env.py") or an environment's directory
// ("./environments/my_env", holding my_env.py or a package of that name).

var moduleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// The registry asks for Python environments last, after installed
// environment.toml directories (package custom's finder).
func init() {
	env.RegisterFinder(env.Finder{Order: 20, Find: func(id string, o env.Options) (env.Spec, error) {
		if s, ok := findPythonEnv(id, o.Python); ok {
			return s, nil
		}
		return env.Spec{}, env.ErrNotFound
	}})
}

// findPythonEnv resolves id to a Python environment: a path to one, else
// a module installed in the python of o. ok is false when id names
// neither.
func findPythonEnv(id string, o pybridge.Options) (env.Spec, bool) {
	if t, ok := pythonPathTarget(id); ok {
		return pythonSpec(t), true
	}
	mod := pythonModule(id)
	if mod == "" || !moduleInstalled(mod, o) {
		return env.Spec{}, false
	}
	return pythonSpec(pybridge.Target{ID: id}), true
}

func pythonSpec(t pybridge.Target) env.Spec {
	mod := t.Module
	if mod == "" {
		mod = pythonModule(t.ID)
	}
	return env.Spec{
		ID:          t.ID,
		Description: "verifiers environment " + mod + " (Python, through grpo's bridge)",
		RawArgs:     true,
		Dir:         t.ModuleDir,
		New: func(a env.Args, o env.Options) (env.Environment, error) {
			t.Args = map[string]any(a)
			return asEnvironment(newPythonEnv(t, o.Python))
		},
	}
}

// pythonModule is the module verifiers' load_environment imports for id.
func pythonModule(id string) string {
	m := strings.ReplaceAll(id[strings.LastIndex(id, "/")+1:], "-", "_")
	if !moduleName.MatchString(m) {
		return ""
	}
	return m
}

// pythonPathTarget resolves a path id: a .py file, or a directory holding
// <dir name>.py or a <dir name>/ package (verifiers' environment layout).
func pythonPathTarget(id string) (pybridge.Target, bool) {
	st, err := os.Stat(id)
	if err != nil {
		return pybridge.Target{}, false
	}
	abs, err := filepath.Abs(id)
	if err != nil {
		return pybridge.Target{}, false
	}
	if !st.IsDir() {
		if filepath.Ext(abs) != ".py" {
			return pybridge.Target{}, false
		}
		mod := strings.TrimSuffix(filepath.Base(abs), ".py")
		return pybridge.Target{ID: id, Module: mod, ModuleDir: filepath.Dir(abs)}, moduleName.MatchString(mod)
	}
	mod := pythonModule(filepath.Base(abs))
	if mod == "" || !fileExists(filepath.Join(abs, mod+".py")) && !fileExists(filepath.Join(abs, mod, "__init__.py")) {
		return pybridge.Target{}, false
	}
	return pybridge.Target{ID: id, Module: mod, ModuleDir: abs}, true
}

// probeScript exits 0 when the module can be imported and is not part of
// the standard library (an id like "random" names no environment).
const probeScript = `import importlib.util, sys
m = sys.argv[1]
sys.exit(0 if m not in getattr(sys, "stdlib_module_names", ()) and importlib.util.find_spec(m) else 1)`

// moduleInstalled asks the python of o (without importing anything)
// whether mod is installed. No python means no.
func moduleInstalled(mod string, o pybridge.Options) bool {
	python := runtimeOptions(o).Python
	if python == "" {
		p, err := pybridge.FindPython()
		if err != nil {
			return false
		}
		python = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, python, "-c", probeScript, mod).Run() == nil
}
