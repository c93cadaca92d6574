//go:build !cgo

package cpu

import "errors"

// loadOpenBLAS cannot dlopen without cgo; the backend uses gonum.
func loadOpenBLAS() (sgemm, error) {
	return nil, errors.New("built with CGO_ENABLED=0: OpenBLAS cannot be loaded, using gonum")
}
