package cuda

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCublasStatusNames holds the names to cublas_api.h's enum where the
// header is installed (scripts/install-cuda.sh): every value it defines
// is named, by its own name.
func TestCublasStatusNames(t *testing.T) {
	h, err := os.ReadFile("/usr/include/cublas_api.h")
	if err != nil {
		t.Skip("no /usr/include/cublas_api.h (scripts/install-cuda.sh installs it)")
	}
	enum := regexp.MustCompile(`(CUBLAS_STATUS_[A-Z_]+) = (\d+)`)
	n := 0
	for _, m := range enum.FindAllStringSubmatch(string(h), -1) {
		v, _ := strconv.Atoi(m[2])
		if got := cublasStatus(v); !strings.HasPrefix(got, m[1]) {
			t.Errorf("status %d is %s in cublas_api.h; named %q", v, m[1], got)
		}
		n++
	}
	if n < 10 {
		t.Errorf("found %d statuses in cublas_api.h, want the 10 of CUDA 11.8", n)
	}
	if got := cublasStatus(99); !strings.Contains(got, "99") {
		t.Errorf("an unknown status: %q", got)
	}
}
