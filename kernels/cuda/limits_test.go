package cuda

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLaunchBoundsMatchPTX checks, without nvcc, that every kernel of the
// committed PTX (both architectures) carries __launch_bounds__ equal to the
// largest block the backend launches it with (kernelMaxBlock), and that
// ptxas's registers for it fit a block of that size. A kernel without a
// bound, or launched wider than its bound, fails here before a GPU sees it.
func TestLaunchBoundsMatchPTX(t *testing.T) {
	files, err := filepath.Glob("ptx/*.ptx")
	if err != nil || len(files) == 0 {
		t.Fatalf("no committed PTX: %v", err)
	}
	entry := regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(`)
	maxntid := regexp.MustCompile(`(?m)^\.maxntid (\d+), 1, 1$`)
	seen := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		locs := entry.FindAllStringSubmatchIndex(src, -1)
		for i, l := range locs {
			name := src[l[2]:l[3]]
			end := len(src)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			// The directive sits between the parameter list and the body.
			head := src[l[0]:end]
			head = head[:strings.Index(head, "{")]
			m := maxntid.FindStringSubmatch(head)
			want, ok := kernelMaxBlock[name]
			switch {
			case !ok:
				t.Errorf("%s: kernel %s has no entry in kernelMaxBlock (launch.go)", f, name)
			case m == nil:
				t.Errorf("%s: kernel %s has no __launch_bounds__ (no .maxntid); want __launch_bounds__(%d)", f, name, want)
			case m[1] != strconv.Itoa(want):
				t.Errorf("%s: kernel %s has __launch_bounds__(%s), but the backend launches it with up to %d threads", f, name, m[1], want)
			}
			seen[name]++
		}
	}
	for name, want := range kernelMaxBlock {
		if seen[name] != 2 {
			t.Errorf("kernelMaxBlock names %s, defined %d times in ptx/*.ptx (want 2)", name, seen[name])
		}
		fig, ok := Figures(name)
		if !ok {
			t.Errorf("%s: not in ptx/ptxas-sm90.txt (run make ptx)", name)
			continue
		}
		if fig.MaxThreads != want {
			t.Errorf("%s: ptxas-sm90.txt records maxntid %d, kernelMaxBlock %d (run make ptx)", name, fig.MaxThreads, want)
		}
		if err := fig.CheckLaunch(name, want, 0, 0); err != nil {
			t.Errorf("the backend's largest launch of %s would fail: %v", name, err)
		}
	}
}

// TestCheckLaunch covers each limit the backend and emu enforce.
func TestCheckLaunch(t *testing.T) {
	f := KernelFigures{Registers: 40, StaticShared: 128, MaxThreads: 256}
	for _, c := range []struct {
		threads, shared, optIn int
		want                   string
	}{
		{256, 0, 0, ""},
		{512, 0, 0, "__launch_bounds__(256)"},
		{256, 48<<10 - 128, 0, ""},
		{256, 48<<10 - 127, 0, "without opting in"},
		{256, 64 << 10, 64 << 10, ""},
		{256, 64<<10 + 4, 64 << 10, "exceed the 65536 it was opted into"},
		{256, 227 << 10, 227 << 10, "exceed sm_90's"},
	} {
		err := f.CheckLaunch("k", c.threads, c.shared, c.optIn)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckLaunch(%d threads, %d shared, opt-in %d) = %v, want %q", c.threads, c.shared, c.optIn, err, c.want)
		}
	}
	big := KernelFigures{Registers: 72}
	if err := big.CheckLaunch("k", 1024, 0, 0); err == nil || !strings.Contains(err.Error(), "73728 registers") {
		t.Errorf("72 registers × 1024 threads: %v", err)
	}
}
