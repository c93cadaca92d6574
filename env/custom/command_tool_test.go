package custom

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
	"github.com/grpo-dev/grpo/internal/sandboxtest"
)

// capitalTool is a command tool's script: the arguments arrive as JSON on
// stdin, the result goes to stdout; failures exit nonzero.
const capitalTool = `import json, os, sys, time
args = json.load(sys.stdin)
c = args["country"]
if c == "Peru":
    print("Lima")
elif c == "slow":
    time.sleep(30)
elif c == "write":
    open(os.path.join(os.path.dirname(__file__), "x"), "w")
else:
    print("unknown country " + c, file=sys.stderr)
    sys.exit(3)
`

// A command-backed [[tool]] runs in the sandbox with the environment's
// directory readable (its script found by a relative argument) but not
// writable; a nonzero exit and a timeout are the call's errors, with
// the command's stderr.
func TestCustomCommandTool(t *testing.T) {
	sandboxtest.Require(t)
	dir := toolEnvDir(t, "", `
[[tool]]
name = "capital"
description = "The capital of a country."
parameters = { type = "object", properties = { country = { type = "string" } }, required = ["country"] }
command = ["python3", "capital.py"]
timeout = "2s"
`)
	envtest.WriteFile(t, dir, "capital.py", capitalTool)
	// The sandbox runs as nobody when the tests run as root: the
	// environment's directory must be readable by it, as a user's is.
	for d := dir; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	os.Chmod(filepath.Join(dir, "capital.py"), 0o644)
	spec, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := spec.New(env.Args{"num_train_examples": -1, "num_eval_examples": -1, "system_prompt": ""}, env.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tools := env.ToolsOf(e)
	if len(tools) != 1 || tools[0].Name() != "capital" || e.(env.TurnLimiter).MaxTurns() != defaultCustomMaxTurns {
		t.Fatalf("tools %v", tools)
	}
	call := func(country string) (string, error) {
		args, _ := json.Marshal(map[string]string{"country": country})
		return tools[0].Call(context.Background(), args)
	}
	if got, err := call("Peru"); err != nil || got != "Lima\n" {
		t.Errorf("Peru: %q, %v", got, err)
	}
	if _, err := call("Atlantis"); err == nil || err.Error() != "capital: exit status 3: unknown country Atlantis" {
		t.Errorf("failing exit: %v", err)
	}
	if _, err := call("write"); err == nil || !strings.Contains(err.Error(), "Read-only file system") {
		t.Errorf("writing into the environment's directory: %v", err)
	}
	if _, err := call("slow"); err == nil || !strings.Contains(err.Error(), "ran longer than 2s") {
		t.Errorf("timeout: %v", err)
	}
}
