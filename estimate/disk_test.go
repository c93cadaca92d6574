package estimate

import (
	"os"
	"testing"
)

// TestAvailableDisk: the real file system reports a plausible number (the
// temp dir is writable, so more than nothing, less than an exabyte), and
// the test hook overrides it.
func TestAvailableDisk(t *testing.T) {
	av, err := AvailableDisk(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !av.Known || av.Bytes <= 0 || av.Bytes > 1<<60 {
		t.Errorf("AvailableDisk(%s) = %+v", os.TempDir(), av)
	}
	t.Setenv(FakeDiskFreeEnv, "3G")
	if av, err := AvailableDisk(os.TempDir()); err != nil || !av.Known || av.Bytes != 3<<30 {
		t.Errorf("with %s=3G: %+v, %v", FakeDiskFreeEnv, av, err)
	}
	t.Setenv(FakeDiskFreeEnv, "lots")
	if _, err := AvailableDisk(os.TempDir()); err == nil {
		t.Errorf("%s=lots accepted", FakeDiskFreeEnv)
	}
}
