// Package sandboxtest is the one rule tests outside package sandbox
// follow when they need it: where bubblewrap cannot create namespaces they
// skip with sandbox's reason, unless GRPO_SANDBOX_REQUIRED is set (CI,
// whose machine must run them), where they fail.
package sandboxtest

import (
	"os"
	"testing"

	"github.com/grpo-dev/grpo/sandbox"
)

// Require skips or fails t where sandboxes with the default config cannot run.
func Require(t testing.TB) {
	t.Helper()
	if err := sandbox.Check(sandbox.Config{}); err != nil {
		if os.Getenv("GRPO_SANDBOX_REQUIRED") != "" {
			t.Fatalf("sandbox needed (GRPO_SANDBOX_REQUIRED is set): %v", err)
		}
		t.Skipf("sandbox unavailable: %v", err)
	}
}
