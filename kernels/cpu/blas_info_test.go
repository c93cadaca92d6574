package cpu

import (
	"os"
	"strings"
	"testing"
)

// The warning's rule, on made-up combinations: OPENBLAS_CORETYPE is only
// ever passed in here, never set (some machines need it; tests must not
// change what OpenBLAS loads).
func TestCoreWarning(t *testing.T) {
	cases := []struct {
		forced, core string
		level        int
		want         string // "" for no warning, else a substring
	}{
		{"", "Haswell", 4, ""},                      // not forced: OpenBLAS chose
		{"Haswell", "Haswell", 4, "about 2× lower"}, // AVX2 kernels on AVX-512
		{"sandybridge", "Sandybridge", 4, "about 4× lower"},
		{"NEHALEM", "Nehalem", 3, "about 4× lower"},
		{"Prescott", "Prescott", 4, "its Prescott (SSE) kernels on a CPU with AVX-512"},
		{"SkylakeX", "SkylakeX", 4, ""}, // forced, but what the CPU runs
		{"Haswell", "Haswell", 3, ""},
		{"Zen", "Zen", 2, ""},         // forced above the CPU: OpenBLAS's own concern
		{"ARMV8", "ARMV8", 4, ""},     // not an x86-64 core: not compared
		{"Haswell", "Haswell", 0, ""}, // CPU level unknown
	}
	for _, c := range cases {
		got := coreWarning(c.forced, c.core, c.level)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("coreWarning(%q, %q, %d) = %q, want %q", c.forced, c.core, c.level, got, c.want)
		}
		if got != "" && (strings.Contains(got, "\n") || !strings.Contains(got, "OPENBLAS_CORETYPE="+c.forced)) {
			t.Errorf("coreWarning(%q, %q, %d) = %q: want one line naming the variable as set", c.forced, c.core, c.level, got)
		}
	}
}

func TestOpenBLASInfo(t *testing.T) {
	info := OpenBLASInfo()
	if err := OpenBLASError(); err != nil {
		if info.Err == nil || !strings.HasPrefix(info.String(), "BLAS: gonum (") {
			t.Errorf("OpenBLAS unavailable (%v): info %+v, String %q", err, info, info.String())
		}
		return
	}
	if info.Err != nil || info.Library == "" {
		t.Fatalf("OpenBLAS loads but OpenBLASInfo = %+v", info)
	}
	// Debian's libopenblas0 has every report; a plain libblas.so.3 has none.
	if strings.Contains(info.Library, "openblas") && (info.Core == "" || info.Config == "") {
		t.Errorf("%s reports no core or config: %+v", info.Library, info)
	}
	if info.Threads != 1 {
		t.Errorf("OpenBLAS threads = %d, want 1 (the backend sets it at load)", info.Threads)
	}
	if info.CoreType != os.Getenv("OPENBLAS_CORETYPE") {
		t.Errorf("CoreType %q, environment %q", info.CoreType, os.Getenv("OPENBLAS_CORETYPE"))
	}
	if os.Getenv("OPENBLAS_CORETYPE") == "" && info.Warning != "" {
		t.Errorf("warning without OPENBLAS_CORETYPE: %q", info.Warning)
	}
	s := info.String()
	if !strings.Contains(s, info.Library) || info.Core != "" && !strings.Contains(s, "core "+info.Core) || !strings.Contains(s, "1 thread") {
		t.Errorf("String() = %q, want the library, core and thread count", s)
	}
	t.Log(s)
	t.Log(info.Config)
}
