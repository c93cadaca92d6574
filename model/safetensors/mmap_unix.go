//go:build unix

package safetensors

import (
	"os"
	"syscall"
)

// mmapFile maps the file read-only and shared: the pages come from the page
// cache, so several processes (or a re-open) share one copy of the weights.
func mmapFile(fh *os.File, size int) ([]byte, func() error, error) {
	data, err := syscall.Mmap(int(fh.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
