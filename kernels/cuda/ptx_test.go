package cuda

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestPTXIsCurrent recompiles every .cu and compares with the committed
// PTX. It needs the nvcc that made them (the version is in
// ptx/ptxas-sm90.txt), so it skips where there is none; CI installs it
// (scripts/install-cuda.sh) so the check runs there.
//
// .ci/run checks the same with make ptx-check before the tests, so here
// it runs only when asked (GRPO_TEST_PTX=1): on a machine with nvcc it
// costs go test ./... 36 s of its 300 s on 2 cores for a duplicate.
func TestPTXIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("recompiles every kernel with nvcc (7 s)")
	}
	if os.Getenv("GRPO_TEST_PTX") != "1" {
		t.Skip("make ptx-check runs this in CI; set GRPO_TEST_PTX=1 to run it here")
	}
	if _, err := exec.LookPath("nvcc"); err != nil {
		t.Skip("nvcc not on PATH (scripts/install-cuda.sh installs it)")
	}
	ver, err := exec.Command("nvcc", "--version").Output()
	if err != nil {
		t.Fatalf("nvcc --version: %v", err)
	}
	rec, err := os.ReadFile("ptx/ptxas-sm90.txt")
	if err != nil {
		t.Fatal(err)
	}
	release := regexp.MustCompile(`release [0-9.]+, V[0-9.]+`)
	have, made := release.FindString(string(ver)), release.FindString(string(rec))
	if have != made {
		t.Skipf("nvcc is %q but the PTX was made by %q; its output would differ in more than the kernels", have, made)
	}
	out, err := exec.Command("ptx/build.sh", "-check").CombinedOutput()
	if err != nil {
		t.Fatalf("%s\n%v", out, err)
	}
}

// TestPTXHasEveryKernel checks, without nvcc, that the committed PTX of
// both architectures defines every kernel the backend launches.
func TestPTXHasEveryKernel(t *testing.T) {
	entries := map[string]int{}
	files, _ := os.ReadDir("ptx")
	entry := regexp.MustCompile(`\.visible \.entry ([A-Za-z0-9_]+)\(`)
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".ptx") {
			continue
		}
		b, err := os.ReadFile("ptx/" + f.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range entry.FindAllStringSubmatch(string(b), -1) {
			entries[m[1]]++
		}
	}
	// Kernel names are the snake_case string literals of the files that
	// launch kernels.
	var src []byte
	for _, f := range []string{"ops.go", "backend.go", "train_ops.go", "sample.go", "fused_ops.go", "lora_ops.go", "moe_ops.go", "linear_ops.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	launched := regexp.MustCompile(`"([a-z0-9]+(?:_[a-z0-9]+)+)"`).FindAllStringSubmatch(string(src), -1)
	if len(launched) < 25 {
		t.Fatalf("found only %d kernel names in ops.go, backend.go, train_ops.go and sample.go", len(launched))
	}
	for _, m := range launched {
		if entries[m[1]] != 2 {
			t.Errorf("kernel %s is defined %d times in ptx/*.ptx, want 2 (compute_80 and compute_90); run make ptx", m[1], entries[m[1]])
		}
	}
}
