package trainer

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rubric"
)

// panickyEnv panics in Rubric, which rollout calls outside its
// per-episode recovery, once armed.
type panickyEnv struct {
	env.Environment
	armed *atomic.Bool
}

func (p panickyEnv) Rubric() *rubric.Rubric {
	if p.armed.Load() {
		panic("planted rubric panic")
	}
	return p.Environment.Rubric()
}

// TestPanicInStepIsAnError: a panic in step 3 ends the run with an error
// line naming the step and the intact checkpoint of step 2, which a resume
// continues from.
func TestPanicInStepIsAnError(t *testing.T) {
	dir := t.TempDir()
	cfg := writeRunFixture(t, dir, 4, 2)
	e, err := env.New(filepath.Join(dir, "env"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	out := filepath.Join(dir, "run")
	_, err = runConfig(t, cfg, WithOutput(out), WithEnvironment(panickyEnv{e, &armed}),
		WithStepCallback(func(s StepResult) { armed.Store(s.Step == 2) }))
	ck := filepath.Join(out, "checkpoints", "step-2")
	if err == nil || !strings.Contains(err.Error(), "step 3: panic: planted rubric panic") ||
		!strings.Contains(err.Error(), "checkpoint "+ck+" is intact") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want one line naming step 3 and %s, got %v", ck, err)
	}
	if log, _ := os.ReadFile(filepath.Join(out, "log.txt")); !strings.Contains(string(log), "panic_test.go") {
		t.Error("log.txt lacks the panic's stack")
	}
	armed.Store(false)
	res, err := runConfig(t, cfg, WithResume(out), WithEnvironment(panickyEnv{e, &armed}))
	if err != nil || res.Steps != 4 {
		t.Fatalf("resume after the panic: %v", err)
	}
}
