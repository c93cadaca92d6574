//go:build !cgo

package cpu

import "errors"

// loadOpenBLAS cannot dlopen without cgo; the backend uses gonum.
func loadOpenBLAS() (sgemm, error) {
	return nil, errors.New("built with CGO_ENABLED=0: OpenBLAS cannot be loaded, using gonum")
}

// openBLASQuery: nothing is loaded, and the CPU's level is unknown (0).
func openBLASQuery() (lib, core, config string, threads, cpuLevel int, err error) {
	_, err = loadOpenBLAS()
	return "", "", "", 0, 0, err
}
