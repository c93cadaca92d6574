package cpu

import (
	"fmt"
	"os"
	"strings"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// BLAS selects the sgemm behind MatMul and Attention.
type BLAS string

const (
	// BLASAuto uses OpenBLAS when it can be loaded and gonum otherwise; the
	// environment variable GRPO_BLAS=gonum or GRPO_BLAS=openblas overrides it
	// (other values are ignored here; a CLI should reject them with
	// ParseBLAS).
	BLASAuto BLAS = "auto"
	// BLASOpenBLAS asks for OpenBLAS (falls back to gonum when it cannot be
	// loaded; BLASName reports which one is active).
	BLASOpenBLAS BLAS = "openblas"
	// BLASGonum is gonum's pure-Go sgemm: always available, ~15× slower.
	BLASGonum BLAS = "gonum"
)

// ParseBLAS turns a user-facing name ("auto", "openblas", "gonum"; "" is
// auto) into a BLAS, or explains which names are accepted.
func ParseBLAS(s string) (BLAS, error) {
	switch b := BLAS(strings.ToLower(strings.TrimSpace(s))); b {
	case "", BLASAuto:
		return BLASAuto, nil
	case BLASOpenBLAS, BLASGonum:
		return b, nil
	}
	return "", fmt.Errorf("BLAS %q is not one of auto, openblas, gonum", s)
}

// sgemm is the one matrix-product primitive the backend uses: row-major,
// explicit leading dimensions, C = alpha·op(A)·op(B) + beta·C. Slices start
// at each matrix's first element. Implementations are single-threaded; the
// backend parallelises by splitting the problem (see matmul.go), so
// OpenBLAS's own thread pool never competes with our goroutines.
type sgemm func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

// gonumSgemm calls gonum's implementation directly rather than through
// blas32.Implementation(), a process-wide setting other code may replace.
func gonumSgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gonum.Implementation{}.Sgemm(trans(tA), trans(tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// selectBLAS resolves the requested BLAS (and GRPO_BLAS for auto) to an
// implementation and its name.
func selectBLAS(want BLAS) (sgemm, string) {
	if want == BLASAuto {
		if env, err := ParseBLAS(os.Getenv("GRPO_BLAS")); err == nil {
			want = env
		}
	}
	if want != BLASGonum {
		if f, err := loadOpenBLAS(); err == nil {
			return f, "openblas"
		}
	}
	return gonumSgemm, "gonum"
}

// OpenBLASError reports why OpenBLAS is unavailable (nil when it loaded):
// built without cgo, or no libopenblas found by dlopen.
func OpenBLASError() error {
	_, err := loadOpenBLAS()
	return err
}
