package emu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
)

func TestMemInfo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "meminfo")
	os.WriteFile(path, []byte("MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:    8000000 kB\n"), 0o644)
	if free, total, err := readMeminfo(path); err != nil || free != 8000000<<10 || total != 16000000<<10 {
		t.Errorf("meminfo: free %d total %d, %v", free, total, err)
	}
	os.WriteFile(path, []byte("MemTotal: 5 kB\nMemAvailable: lots kB\n"), 0o644)
	if _, _, err := readMeminfo(path); err == nil || !strings.Contains(err.Error(), "MemAvailable line") {
		t.Errorf("bad meminfo: %v", err)
	}
	os.WriteFile(path, []byte("MemTotal: 5 kB\n"), 0o644)
	if _, _, err := readMeminfo(path); err == nil || !strings.Contains(err.Error(), "lacks MemAvailable") {
		t.Errorf("meminfo without MemAvailable: %v", err)
	}

	// Through the backend, as the trainer asks it.
	b := New()
	defer b.Close()
	var be kernels.Backend = b
	r, ok := be.(kernels.MemoryReporter)
	if !ok {
		t.Fatal("the emu backend is not a kernels.MemoryReporter")
	}
	free, total, err := r.MemInfo()
	if _, statErr := os.Stat("/proc/meminfo"); statErr != nil {
		t.Skipf("no /proc/meminfo here (%v); MemInfo says: %v", statErr, err)
	}
	if err != nil || free <= 0 || total < free {
		t.Errorf("MemInfo: free %d, total %d, %v", free, total, err)
	}
	t.Logf("host memory: %d MiB free of %d MiB", free>>20, total>>20)
}
