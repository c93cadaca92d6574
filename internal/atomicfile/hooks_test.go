package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// recorder logs the package's renames and fsyncs, which still happen for
// real, and can make chosen renames fail.
type recorder struct {
	mu     sync.Mutex
	events []string
	// failRename, if set, is asked before each rename; an error it returns
	// is what the rename returns, and the rename is not done.
	failRename func(from, to string) error
}

func record(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	oldRename, oldFile, oldDir := rename, syncFile, syncDir
	rename = func(from, to string) error {
		if r.failRename != nil {
			if err := r.failRename(from, to); err != nil {
				r.log("rename-failed " + from + " " + to)
				return err
			}
		}
		r.log("rename " + from + " " + to)
		return oldRename(from, to)
	}
	syncFile = func(f *os.File) error {
		r.log("fsync " + f.Name())
		return oldFile(f)
	}
	syncDir = func(dir string) error {
		r.log("fsync-dir " + filepath.Clean(dir))
		return oldDir(dir)
	}
	t.Cleanup(func() { rename, syncFile, syncDir = oldRename, oldFile, oldDir })
	return r
}

func (r *recorder) log(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// index is the position of the first event starting with prefix, or -1.
func (r *recorder) index(prefix string) int {
	for i, e := range r.events {
		if strings.HasPrefix(e, prefix) {
			return i
		}
	}
	return -1
}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
