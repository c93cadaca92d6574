package estimate

import (
	"fmt"
	"os"
)

// FakeDiskFreeEnv is a test hook like FakeMemAvailableEnv: when set (a
// byte count, K/M/G/T suffixes in binary units), AvailableDisk reports it
// instead of asking the file system. It is not meant for users.
const FakeDiskFreeEnv = "GRPO_FAKE_DISKFREE"

// AvailableDisk reports the bytes an unprivileged process may still write
// on the file system holding dir (statfs's available blocks), so a job
// that streams its output (eval results) can be refused before it starts
// rather than fail with a full disk hours in. Where the system cannot say,
// the result is unknown and the job unchecked.
func AvailableDisk(dir string) (Available, error) {
	if v := os.Getenv(FakeDiskFreeEnv); v != "" {
		n, err := parseBytes(v)
		if err != nil {
			return Available{}, fmt.Errorf("%s=%q: %v; want a byte count such as 8G", FakeDiskFreeEnv, v, err)
		}
		return Available{Bytes: n, Known: true, Source: FakeDiskFreeEnv}, nil
	}
	n, ok := diskFree(dir)
	if !ok {
		return Available{Source: "free disk space unknown on this system"}, nil
	}
	return Available{Bytes: n, Known: true, Source: "statfs " + dir}, nil
}
