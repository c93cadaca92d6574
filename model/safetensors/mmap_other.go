//go:build !unix

package safetensors

import (
	"errors"
	"os"
)

// mmapFile is unavailable here; load falls back to reading into memory.
func mmapFile(*os.File, int) ([]byte, func() error, error) {
	return nil, nil, errors.New("mmap not supported on this platform")
}
