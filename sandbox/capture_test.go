package sandbox

import (
	"strconv"
	"strings"
	"testing"
)

// A cell that fills its /tmp does not take the next cell's output with
// it: the interpreter's capture lives outside the tmpfs the cell can fill.
func TestOutputSurvivesFullTmp(t *testing.T) {
	it := acquire(t, newTestPool(t, hostileConfig(), 1))
	// Files of at most FileSize each, until the tmpfs refuses (ENOSPC);
	// the errno comes back as the cell's value, which is not captured.
	fill := `import itertools
def fill():
    for i in itertools.count():
        try:
            with open('/tmp/fill%d' % i, 'wb') as f:
                while True:
                    f.write(b'x' * 65536)
                    f.flush()
        except OSError as e:
            if e.errno != 27:
                return e.errno
fill()`
	if r := run(t, it, fill); r.Value != "28" {
		t.Fatalf("filling /tmp: value %q, error %q; want ENOSPC (28)", r.Value, r.Error)
	}
	r := run(t, it, "print('still here')")
	if r.Stdout != "still here\n" {
		t.Errorf("after /tmp filled, print('still here') gave %q", r.Text())
	}
}

// Output that cannot be written when the cell ends (its last print over
// RLIMIT_FSIZE) is an error in the result, not "(no output)".
func TestLostOutputIsAnError(t *testing.T) {
	cfg := hostileConfig()
	it := acquire(t, newTestPool(t, cfg, 1))
	code := "import os\nos.write(1, b'a' * (" + itoa(cfg.FileSize) + " - 4))\nprint('0123456789')"
	r := run(t, it, code)
	if !strings.Contains(r.Error, "the cell's output could not be written") || !strings.Contains(r.Error, "File too large") {
		t.Errorf("output lost at the end of the cell: error %q, stdout %d bytes", r.Error, len(r.Stdout))
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
