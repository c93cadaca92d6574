package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestWriteFileCreatesAndReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	for _, text := range []string{"first", "second, longer than the first"} {
		if err := WriteFile(path, []byte(text), 0o640); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, path); got != text {
			t.Fatalf("got %q, want %q", got, text)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm&^0o640 != 0 || perm&0o600 != 0o600 {
		t.Errorf("mode %v, want 0640 less the umask", perm)
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"config.toml"}) {
		t.Errorf("directory holds %v", names)
	}
}

// TestWriteFailingFillKeepsOld: a writer that fails half way leaves the old
// file whole and no temporary file.
func TestWriteFailingFillKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.jsonl")
	if err := WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk on fire")
	err := Write(path, 0o644, func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("partial ", 100000))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the fill's error", err)
	}
	if got := readFile(t, path); got != "old\n" {
		t.Fatalf("old file became %q", got)
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"metrics.jsonl"}) {
		t.Errorf("left behind: %v", names)
	}
}

// TestWriteFailingRenameKeepsOld: when the rename into place fails, the
// old file stays and the synced temporary file is removed.
func TestWriteFailingRenameKeepsOld(t *testing.T) {
	r := record(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("rename refused")
	r.failRename = func(from, to string) error { return boom }
	if err := WriteFile(path, []byte("new"), 0o644); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if got := readFile(t, path); got != "old" {
		t.Fatalf("old file became %q", got)
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"state.json"}) {
		t.Errorf("left behind: %v", names)
	}
}

// TestWriteFileSyncs: the file is fsynced before it is renamed into place,
// and its directory after, so that both the bytes and the name survive a
// power cut.
func TestWriteFileSyncs(t *testing.T) {
	r := record(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "adapter_config.json")
	if err := WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpPrefix := filepath.Join(dir, ".adapter_config.json.tmp-")
	file, ren, dsync := r.index("fsync "+tmpPrefix), r.index("rename "+tmpPrefix), r.index("fsync-dir "+filepath.Clean(dir))
	if file < 0 || ren < 0 || dsync < 0 || !(file < ren && ren < dsync) {
		t.Fatalf("want fsync of the temporary file, rename, fsync of %s in that order; got %q", dir, r.events)
	}
	if !strings.HasSuffix(r.events[ren], " "+path) {
		t.Errorf("renamed to the wrong place: %s", r.events[ren])
	}
}

func TestCopyFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(src, []byte("#!/bin/sh\necho hi\n"), 0o750); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "copy.sh")
	if err := os.WriteFile(dst, []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("run.sh", link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if err := CopyFile(dst, link); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dst); got != "#!/bin/sh\necho hi\n" {
		t.Fatalf("copy holds %q", got)
	}
	sst, _ := os.Stat(src)
	dst2, _ := os.Lstat(dst)
	if !dst2.Mode().IsRegular() || dst2.Mode().Perm() != sst.Mode().Perm() {
		t.Errorf("copy has mode %v, the source %v", dst2.Mode(), sst.Mode())
	}
	// A source that cannot be read leaves the destination alone.
	if err := CopyFile(dst, filepath.Join(dir, "missing")); err == nil {
		t.Fatal("copying a missing file succeeded")
	}
	if got := readFile(t, dst); got != "#!/bin/sh\necho hi\n" {
		t.Fatalf("failed copy changed the destination to %q", got)
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"copy.sh", "link", "run.sh"}) {
		t.Errorf("directory holds %v", names)
	}
}

// TestRenameSyncsBothDirectories: a file moved between directories is
// durable in its new one and gone from its old one.
func TestRenameSyncsBothDirectories(t *testing.T) {
	r := record(t)
	a, b := t.TempDir(), t.TempDir()
	from, to := filepath.Join(a, "blob.incomplete"), filepath.Join(b, "blob")
	if err := os.WriteFile(from, []byte("bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Rename(from, to); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, to); got != "bytes" {
		t.Fatalf("moved file holds %q", got)
	}
	ren := r.index("rename ")
	if ren < 0 || r.index("fsync-dir "+b) < ren || r.index("fsync-dir "+a) < ren {
		t.Fatalf("want the rename, then fsyncs of %s and %s; got %q", b, a, r.events)
	}
}

// TestSyncDirectoryForReal: fsync of a real directory succeeds (or is
// reported as unsupported, which is not an error).
func TestSyncDirectoryForReal(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("directories are not fsynced on Windows")
	}
	if err := syncDirectory(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := syncDirectory(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("fsync of a missing directory succeeded")
	}
}
