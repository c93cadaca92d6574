package atomicfile

import (
	"os"
	"path/filepath"
	"regexp"
)

// tempName is what Write (".NAME.tmp-" and 12 hex digits) and WriteDir
// (os.MkdirTemp's ".NAME.tmp-" and decimal digits) name their temporaries.
var tempName = regexp.MustCompile(`^\..+\.tmp-[0-9a-f]+$`)

// RemoveStale removes the temporaries a write killed midway (a crash, a
// SIGKILL) left in dir, and returns their paths. Only the owner of dir
// may call it, under its lock: a live writer's temporary looks the same.
func RemoveStale(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if !tempName.MatchString(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.RemoveAll(p); err != nil {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}
