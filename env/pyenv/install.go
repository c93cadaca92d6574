package pyenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/custom"
	"github.com/grpo-dev/grpo/env/pybridge"
)

// EnvironmentsHubURL is the Environments Hub's API, as verifiers'
// installer (verifiers/utils/install_utils.py at 8d4b33247) asks it;
// $GRPO_ENV_HUB_URL replaces it (a mirror, or a test's server).
const EnvironmentsHubURL = "https://api.primeintellect.ai/api/v1/environmentshub"

// Install installs a verifiers environment, as `prime env install` does,
// into a virtual environment, never a system interpreter: grpo's own
// (VenvDir, made with uv or python3 -m venv on first use; environments
// then run in it), a $GRPO_PYTHON that is a virtual environment's python,
// or the python of opts:
//
//   - owner/name[@version]: nothing when the module is already installed
//     (and no version is asked for); else the hub's details for it give a
//     package index or a wheel, and grpo runs
//     `PYTHON -m pip install --upgrade NAME --extra-index-url INDEX` or
//     `PYTHON -m pip install --upgrade WHEEL_URL`
//     (`uv pip install --python PYTHON …` where that python has no pip);
//   - a directory with a pyproject.toml: `PYTHON -m pip install -e DIR`;
//   - a module file or a directory without one: nothing to install; it is
//     checked to load.
//
// It reports what it did, in one line, and streams pip's output to log.
func Install(ctx context.Context, target string, log io.Writer, opts ...env.Option) (string, error) {
	o := env.Apply(opts...).Python
	if st, err := os.Stat(target); err == nil && st.IsDir() && fileExists(filepath.Join(target, "pyproject.toml")) {
		python, err := installPython(ctx, o, log)
		if err != nil {
			return "", fmt.Errorf("env install %s: %v", target, err)
		}
		if err := runCommand(ctx, log, pipCommand(python, "install", "-e", target)); err != nil {
			return "", fmt.Errorf("env install %s: %v", target, err)
		}
		abs, _ := filepath.Abs(target)
		return fmt.Sprintf("installed %s into %s; name it as id = %q", target, python, strings.ReplaceAll(filepath.Base(abs), "_", "-")), nil
	}
	if t, ok := pythonPathTarget(target); ok {
		if err := checkLoads(t, o); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s loads; nothing to install: name it in a config as id = %q", target, target), nil
	}
	if st, err := os.Stat(target); err == nil && st.IsDir() {
		return "", fmt.Errorf("env install %s: the directory has no %s (a grpo environment), pyproject.toml or %s.py (a verifiers environment)",
			target, custom.ConfigFile, pythonModule(filepath.Base(target)))
	}
	owner, name, version, ok := parseHubID(target)
	if !ok {
		return "", fmt.Errorf("env install %s: not a directory, a .py file or an owner/name[@version] of the Environments Hub", target)
	}
	id := owner + "/" + name
	mod := pythonModule(name)
	if rt := runtimeOptions(o); version == "" && moduleInstalled(mod, rt) {
		return fmt.Sprintf("%s is already installed in %s (module %s)", id, pythonName(rt), mod), nil
	}
	d, err := hubDetails(ctx, owner, name, version)
	if err != nil {
		return "", fmt.Errorf("env install %s: %v; or install the package yourself into a virtual environment and set GRPO_PYTHON to its python, or name a local path", target, err)
	}
	python, err := installPython(ctx, o, log)
	if err != nil {
		return "", fmt.Errorf("env install %s: %v", target, err)
	}
	o.Python = python
	args := []string{"install", "--upgrade", d.WheelURL}
	if d.SimpleIndexURL != "" {
		spec := mod
		if version != "" && version != "latest" {
			spec += "==" + version
		}
		args = []string{"install", "--upgrade", spec, "--extra-index-url", d.SimpleIndexURL}
	}
	if err := runCommand(ctx, log, pipCommand(python, args...)); err != nil {
		return "", fmt.Errorf("env install %s: %v", target, err)
	}
	if !moduleInstalled(mod, o) {
		return "", fmt.Errorf("env install %s: pip succeeded but %s still cannot find module %s", target, python, mod)
	}
	return fmt.Sprintf("installed %s into %s (module %s)", id, python, mod), nil
}

// pythonName is the python o runs environments in, for messages.
func pythonName(o pybridge.Options) string {
	if o.Python != "" {
		return o.Python
	}
	if p, err := pybridge.FindPython(); err == nil {
		return p
	}
	return "python3"
}

// parseHubID splits owner/name[@version].
func parseHubID(s string) (owner, name, version string, ok bool) {
	if i := strings.LastIndex(s, "@"); i >= 0 {
		s, version = s[:i], s[i+1:]
	}
	owner, name, ok = strings.Cut(s, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") || pythonModule(name) == "" {
		return "", "", "", false
	}
	return owner, name, version, true
}

// hubEnv is what the hub says about one environment version.
type hubEnv struct {
	SimpleIndexURL string `json:"simple_index_url"`
	WheelURL       string `json:"wheel_url"`
	Visibility     string `json:"visibility"`
}

func hubDetails(ctx context.Context, owner, name, version string) (hubEnv, error) {
	base := os.Getenv("GRPO_ENV_HUB_URL")
	if base == "" {
		base = EnvironmentsHubURL
	}
	if version == "" {
		version = "latest"
	}
	u := strings.TrimRight(base, "/") + "/" + url.PathEscape(owner) + "/" + url.PathEscape(name) + "/@" + url.PathEscape(version)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return hubEnv{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return hubEnv{}, fmt.Errorf("the Environments Hub (%s) is unreachable: %v", base, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusNotFound {
		return hubEnv{}, fmt.Errorf("the Environments Hub has no %s/%s@%s", owner, name, version)
	}
	if resp.StatusCode != http.StatusOK {
		return hubEnv{}, fmt.Errorf("the Environments Hub answered %s for %s", resp.Status, u)
	}
	// The details come bare or under "data".
	var wrapped struct {
		Data *hubEnv `json:"data"`
	}
	var d hubEnv
	if err := json.Unmarshal(body, &wrapped); err != nil {
		return hubEnv{}, fmt.Errorf("the Environments Hub's answer for %s is not JSON: %v", u, err)
	}
	if wrapped.Data != nil {
		d = *wrapped.Data
	} else {
		json.Unmarshal(body, &d)
	}
	if wu, err := url.Parse(d.WheelURL); d.WheelURL != "" && (err != nil || wu.Host == "" || wu.Scheme != "http" && wu.Scheme != "https") {
		d.WheelURL = ""
	}
	switch {
	case d.SimpleIndexURL != "" || d.WheelURL != "":
		return d, nil
	case d.Visibility == "PRIVATE":
		return hubEnv{}, fmt.Errorf("%s/%s is private: download it with `prime env pull %s/%s` and install the directory", owner, name, owner, name)
	}
	return hubEnv{}, fmt.Errorf("the Environments Hub offers no package for %s/%s@%s", owner, name, version)
}

// pipCommand is `python -m pip ARGS`, or uv's pip for a python without
// pip (a uv-made virtual environment), as verifiers' installer uses uv.
func pipCommand(python string, args ...string) []string {
	if exec.Command(python, "-m", "pip", "--version").Run() != nil {
		if uv, err := exec.LookPath("uv"); err == nil {
			return append([]string{uv, "pip", args[0], "--python", python}, args[1:]...)
		}
	}
	return append([]string{python, "-m", "pip"}, args...)
}

func runInstall(ctx context.Context, log io.Writer, argv []string) error {
	fmt.Fprintf(log, "running %s\n", strings.Join(argv, " "))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s failed: %v", strings.Join(argv, " "), err)
	}
	return nil
}

// checkLoads starts the environment once and stops it.
func checkLoads(t pybridge.Target, o pybridge.Options) error {
	e, err := newPythonEnv(t, o)
	if err != nil {
		return err
	}
	return e.Close()
}

// IsInstallTarget reports whether `grpo env install X` means a verifiers
// environment: X is not a directory with an environment.toml.
func IsInstallTarget(x string) bool {
	return !fileExists(filepath.Join(x, custom.ConfigFile))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
