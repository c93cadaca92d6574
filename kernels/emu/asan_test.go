//go:build asan

package emu

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

// Built only by the ASan job (go test -asan, CGO_CXXFLAGS with
// -fsanitize=address: .ci/asan.sh), where the emulator's kernels are
// instrumented and device memory (C heap) has red zones.

// TestASanCatchesPlantedOOB runs add_f32 compiled to read one element past
// its operands (k_planted_oob.cc) in a child process and requires ASan to
// stop it with a heap-buffer-overflow report that names the kernel.
func TestASanCatchesPlantedOOB(t *testing.T) {
	if os.Getenv("GRPO_ASAN_CHILD") == "1" {
		d := NewDevice()
		d.Substitute("add_f32", "planted-oob/add_f32")
		b := newBackend(d)
		const n = 1000
		x, y, z := b.Alloc(kernels.F32, n), b.Alloc(kernels.F32, n), b.Alloc(kernels.F32, n)
		b.Add(z, x, y, n)
		t.Logf("sync: %v", b.Sync())
		return // reached only if ASan missed the read
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestASanCatchesPlantedOOB$", "-test.v")
	cmd.Env = append(os.Environ(), "GRPO_ASAN_CHILD=1")
	// GCC's libasan symbolizes frames only through llvm-symbolizer, and
	// finds it on PATH only under some names; name it where it exists.
	if p, err := exec.LookPath("llvm-symbolizer"); err == nil && os.Getenv("ASAN_SYMBOLIZER_PATH") == "" {
		cmd.Env = append(cmd.Env, "ASAN_SYMBOLIZER_PATH="+p)
	}
	out, err := cmd.CombinedOutput()
	report := symbolize(string(out))
	if err == nil {
		t.Fatalf("the out-of-bounds kernel ran to completion under ASan:\n%s", report)
	}
	for _, want := range []string{"AddressSanitizer: heap-buffer-overflow", "add_f32"} {
		if !strings.Contains(report, want) {
			t.Errorf("ASan's report lacks %q:\n%.3000s", want, report)
		}
	}
	if i := strings.Index(report, "ERROR: AddressSanitizer"); i >= 0 {
		t.Logf("caught as expected:\n%.1200s", report[i:])
	}
}

// symbolize appends function names for the frames of an unsymbolized ASan
// report ("(binary+0xADDR)", no llvm-symbolizer on the machine) through
// addr2line, which comes with the C toolchain cgo needs anyway.
func symbolize(report string) string {
	frame := regexp.MustCompile(`\(([^()+ ]+)\+(0x[0-9a-f]+)\)`)
	byBinary := map[string][]string{}
	for _, m := range frame.FindAllStringSubmatch(report, 40) {
		byBinary[m[1]] = append(byBinary[m[1]], m[2])
	}
	for bin, addrs := range byBinary {
		out, err := exec.Command("addr2line", append([]string{"-f", "-C", "-e", bin}, addrs...)...).Output()
		if err == nil {
			report += "\naddr2line " + bin + ":\n" + string(out)
		}
	}
	return report
}
