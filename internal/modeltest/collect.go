package modeltest

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/grpo-dev/grpo/kernels"
)

// TB is the part of testing.TB the checks use, so that a test can run a
// check against a deliberately broken backend and collect its failures
// (Collect) instead of failing.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Fatal(args ...any)
	Logf(format string, args ...any)
}

// collector records failures; Fatal ends the check's goroutine as
// testing.T's does.
type collector struct {
	mu   sync.Mutex
	errs []string
}

func (c *collector) Helper()                   {}
func (c *collector) Logf(string, ...any)       {}
func (c *collector) Errorf(f string, a ...any) { c.add(fmt.Sprintf(f, a...)) }
func (c *collector) Fatalf(f string, a ...any) { c.add(fmt.Sprintf(f, a...)); runtime.Goexit() }
func (c *collector) Fatal(a ...any)            { c.add(fmt.Sprint(a...)); runtime.Goexit() }

func (c *collector) add(s string) {
	c.mu.Lock()
	c.errs = append(c.errs, s)
	c.mu.Unlock()
}

// Collect runs check on its own goroutine and returns the failures it
// reported (nil if it passed).
func Collect(check func(TB)) []string {
	c := &collector{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		check(c)
	}()
	wg.Wait()
	return c.errs
}

// CheckLogits is the logits check of model name (one of Models), as Run
// runs it.
func CheckLogits(t TB, be kernels.Backend, testdata, name string, o Options) {
	checkLogits(t, be, testdata, filepath.Join(testdata, "models", name), name, true, o)
}

// CheckGrads is the own-batch gradient check of model name, as Run runs it.
func CheckGrads(t TB, be kernels.Backend, testdata, name string) {
	checkGrads(t, be, filepath.Join(testdata, "models", name), Options{})
}
