package pyenv

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
)

func TestInstallPythonLocalFile(t *testing.T) {
	o := withStubVerifiers(t)
	msg, err := Install(context.Background(), guessEnv, &bytes.Buffer{}, env.WithPython(o))
	if err != nil || msg != guessEnv+` loads; nothing to install: name it in a config as id = "`+guessEnv+`"` {
		t.Errorf("got %q, %v", msg, err)
	}
	bad := filepath.Join(t.TempDir(), "broken_env.py")
	os.WriteFile(bad, []byte("def load_environment():\n    raise ValueError('no dataset')\n"), 0o644)
	if _, err := Install(context.Background(), bad, &bytes.Buffer{}, env.WithPython(o)); err == nil || !strings.Contains(err.Error(), "no dataset") {
		t.Errorf("broken env: %v", err)
	}
}

func TestInstallPythonAlreadyInstalled(t *testing.T) {
	o := withStubVerifiers(t)
	t.Setenv("GRPO_ENV_HUB_URL", "http://127.0.0.1:1") // never asked
	msg, err := Install(context.Background(), "someone/guess-number", &bytes.Buffer{}, env.WithPython(o))
	py, _ := exec.LookPath("python3")
	if err != nil || msg != "someone/guess-number is already installed in "+py+" (module guess_number)" {
		t.Errorf("got %q, %v", msg, err)
	}
}

func TestInstallPythonHubUnreachable(t *testing.T) {
	o := withStubVerifiers(t)
	t.Setenv("GRPO_ENV_HUB_URL", "http://127.0.0.1:1")
	_, err := Install(context.Background(), "someone/not-here", &bytes.Buffer{}, env.WithPython(o))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "env install someone/not-here: the Environments Hub (http://127.0.0.1:1) is unreachable") {
		t.Errorf("got %v", err)
	}
	if _, err := Install(context.Background(), "not a target", &bytes.Buffer{}, env.WithPython(o)); err == nil || !strings.Contains(err.Error(), "owner/name[@version]") {
		t.Errorf("bad target: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "my_env")
	os.Mkdir(empty, 0o755)
	if _, err := Install(context.Background(), empty, &bytes.Buffer{}, env.WithPython(o)); err == nil || !strings.Contains(err.Error(), "pyproject.toml or my_env.py") {
		t.Errorf("empty directory: %v", err)
	}
}

// fakePip is a python whose `-m pip install …` records its arguments and
// "installs" the hub_env module; anything else runs the real python3.
func fakePip(t *testing.T) (python, record string) {
	t.Helper()
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	os.Mkdir(site, 0o755)
	t.Setenv("PYTHONPATH", os.Getenv("PYTHONPATH")+string(filepath.ListSeparator)+site)
	src, _ := filepath.Abs(guessEnv)
	record = filepath.Join(dir, "pip.log")
	real, _ := exec.LookPath("python3")
	script := fmt.Sprintf(`#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  [ "$3" = "install" ] || exit 0
  shift 2; echo "$*" >> %q; cp %q %q; exit 0
fi
exec %q "$@"
`, record, src, filepath.Join(site, "hub_env.py"), real)
	python = filepath.Join(dir, "python")
	if err := os.WriteFile(python, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return python, record
}

func TestInstallPythonFromHub(t *testing.T) {
	o := withStubVerifiers(t)
	python, record := fakePip(t)
	o.Python = python // a Go caller's python: installed into as it is
	var asked []string
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path)
		switch r.URL.Path {
		case "/someone/hub-env/@latest":
			fmt.Fprint(w, `{"data": {"wheel_url": "https://hub.invalid/hub_env-0.1-py3-none-any.whl"}}`)
		case "/someone/hub-env/@0.2":
			fmt.Fprint(w, `{"simple_index_url": "https://hub.invalid/simple/", "wheel_url": null}`)
		case "/someone/secret/@latest":
			fmt.Fprint(w, `{"data": {"visibility": "PRIVATE"}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer hub.Close()
	t.Setenv("GRPO_ENV_HUB_URL", hub.URL)
	msg, err := Install(context.Background(), "someone/hub-env", &bytes.Buffer{}, env.WithPython(o))
	if err != nil || msg != "installed someone/hub-env into "+python+" (module hub_env)" {
		t.Fatalf("got %q, %v", msg, err)
	}
	// A version is installed even over an installed module.
	if _, err := Install(context.Background(), "someone/hub-env@0.2", &bytes.Buffer{}, env.WithPython(o)); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(record)
	want := "install --upgrade https://hub.invalid/hub_env-0.1-py3-none-any.whl\n" +
		"install --upgrade hub_env==0.2 --extra-index-url https://hub.invalid/simple/\n"
	if string(got) != want {
		t.Errorf("pip ran:\n%s\nwant:\n%s", got, want)
	}
	if _, ok := env.Lookup("someone/hub-env"); !ok {
		t.Errorf("the installed environment is not found by its id")
	}
	if _, err := Install(context.Background(), "someone/secret", &bytes.Buffer{}, env.WithPython(o)); err == nil || !strings.Contains(err.Error(), "someone/secret is private") {
		t.Errorf("private: %v", err)
	}
	if _, err := Install(context.Background(), "someone/nothing", &bytes.Buffer{}, env.WithPython(o)); err == nil || !strings.Contains(err.Error(), "the Environments Hub has no someone/nothing@latest") {
		t.Errorf("missing: %v", err)
	}
	if len(asked) != 4 {
		t.Errorf("hub asked %v", asked)
	}
}
