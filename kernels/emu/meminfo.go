package emu

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MemInfo reports the host's memory, which is the emulated device's:
// MemAvailable and MemTotal of /proc/meminfo. Elsewhere than Linux it is
// an error (unknown), not a guess.
func (d *Device) MemInfo() (free, total int64, err error) {
	return readMeminfo("/proc/meminfo")
}

// readMeminfo reads MemAvailable and MemTotal ("<n> kB" lines) from path.
func readMeminfo(path string) (free, total int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("emu: host memory unknown: %v", err)
	}
	defer f.Close()
	vals := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || key != "MemAvailable" && key != "MemTotal" {
			continue
		}
		fields := strings.Fields(rest)
		n, perr := int64(0), error(nil)
		if len(fields) == 2 && fields[1] == "kB" {
			n, perr = strconv.ParseInt(fields[0], 10, 64)
		}
		if len(fields) != 2 || fields[1] != "kB" || perr != nil || n < 0 {
			return 0, 0, fmt.Errorf("emu: %s: %s line %q: want \"<n> kB\"", path, key, sc.Text())
		}
		vals[key] = n << 10
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("emu: %s: %v", path, err)
	}
	free, okFree := vals["MemAvailable"]
	total, okTotal := vals["MemTotal"]
	if !okFree || !okTotal {
		return 0, 0, fmt.Errorf("emu: %s lacks MemAvailable or MemTotal; host memory unknown", path)
	}
	return free, total, nil
}
