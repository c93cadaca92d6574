package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fillWith returns a fill that writes files (name → content, names may
// hold '/') with plain os calls, as a careless writer would.
func fillWith(files map[string]string) func(tmp string) error {
	return func(tmp string) error {
		for name, text := range files {
			p := filepath.Join(tmp, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestWriteDirCreates(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "runs", "adapter")
	if err := WriteDir(dir, nil, fillWith(map[string]string{"a.json": "A", "sub/b.bin": "B"})); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(dir, "a.json")) != "A" || readFile(t, filepath.Join(dir, "sub", "b.bin")) != "B" {
		t.Fatal("contents differ")
	}
	st, _ := os.Stat(dir)
	if st.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755 as a plain mkdir makes it", st.Mode().Perm())
	}
	if names := entries(t, filepath.Dir(dir)); !slices.Equal(names, []string{"adapter"}) {
		t.Errorf("left behind: %v", names)
	}
}

func TestWriteDirReplaces(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "step-3")
	if err := WriteDir(dir, nil, fillWith(map[string]string{"old.txt": "old"})); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(dir, nil, fillWith(map[string]string{"new.txt": "new"})); err != nil {
		t.Fatal(err)
	}
	if names := entries(t, dir); !slices.Equal(names, []string{"new.txt"}) {
		t.Errorf("replaced directory holds %v, want only the new file", names)
	}
	if names := entries(t, parent); !slices.Equal(names, []string{"step-3"}) {
		t.Errorf("left behind: %v", names)
	}
}

// TestWriteDirChecksBeforeReplacing: a directory canReplace refuses is not
// touched and fill never runs; nor is a file where a directory should be.
func TestWriteDirChecksBeforeReplacing(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "notes")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep me"), 0o644)
	refuse := errors.New("not an adapter directory")
	filled := false
	err := WriteDir(dir, func(string) error { return refuse }, func(string) error { filled = true; return nil })
	if !errors.Is(err, refuse) || filled {
		t.Fatalf("got %v (fill ran: %v), want the refusal before any writing", err, filled)
	}
	if readFile(t, filepath.Join(dir, "notes.txt")) != "keep me" {
		t.Fatal("a refused directory was changed")
	}
	file := filepath.Join(parent, "file")
	os.WriteFile(file, []byte("a file"), 0o644)
	if err := WriteDir(file, nil, fillWith(nil)); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("writing a directory over a file: %v", err)
	}
	if readFile(t, file) != "a file" {
		t.Fatal("the file was changed")
	}
	if names := entries(t, parent); !slices.Equal(names, []string{"file", "notes"}) {
		t.Errorf("left behind: %v", names)
	}
}

// TestWriteDirFailingFillKeepsOld: a fill that fails half way leaves the old
// directory as it was and no temporary directory.
func TestWriteDirFailingFillKeepsOld(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "adapter")
	if err := WriteDir(dir, nil, fillWith(map[string]string{"w": "old"})); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("out of space")
	err := WriteDir(dir, nil, func(tmp string) error {
		fillWith(map[string]string{"w": "half"})(tmp)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if readFile(t, filepath.Join(dir, "w")) != "old" {
		t.Fatal("old directory changed")
	}
	if names := entries(t, parent); !slices.Equal(names, []string{"adapter"}) {
		t.Errorf("left behind: %v", names)
	}
}

// TestWriteDirRestoresOnFailure: when the new copy cannot be renamed into
// place, the old one, already moved aside, is moved back.
func TestWriteDirRestoresOnFailure(t *testing.T) {
	r := record(t)
	parent := t.TempDir()
	dir := filepath.Join(parent, "adapter")
	if err := WriteDir(dir, nil, fillWith(map[string]string{"w": "old"})); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("rename refused")
	r.failRename = func(from, to string) error {
		if to == dir && strings.Contains(from, ".tmp-") {
			return boom
		}
		return nil
	}
	if err := WriteDir(dir, nil, fillWith(map[string]string{"w": "new"})); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if r.index("rename "+dir+" ") < 0 {
		t.Fatalf("the old directory was never moved aside, so nothing was restored: %q", r.events)
	}
	if readFile(t, filepath.Join(dir, "w")) != "old" {
		t.Fatal("old directory not restored")
	}
	if names := entries(t, parent); !slices.Equal(names, []string{"adapter"}) {
		t.Errorf("left behind: %v", names)
	}
}

// TestWriteDirSaysWhereTheOldCopyIs: when even moving the old copy back
// fails, the error names where it was left, and it is there whole.
func TestWriteDirSaysWhereTheOldCopyIs(t *testing.T) {
	r := record(t)
	parent := t.TempDir()
	dir := filepath.Join(parent, "adapter")
	if err := WriteDir(dir, nil, fillWith(map[string]string{"w": "old"})); err != nil {
		t.Fatal(err)
	}
	r.failRename = func(from, to string) error {
		if to == dir {
			return errors.New("rename refused")
		}
		return nil
	}
	err := WriteDir(dir, nil, fillWith(map[string]string{"w": "new"}))
	if err == nil {
		t.Fatal("succeeded")
	}
	var old string
	for _, name := range entries(t, parent) {
		if strings.HasPrefix(name, ".adapter.old-") {
			old = filepath.Join(parent, name)
		}
	}
	if old == "" || !strings.Contains(err.Error(), old) {
		t.Fatalf("error %q does not name the old copy (parent holds %v)", err, entries(t, parent))
	}
	if readFile(t, filepath.Join(old, "w")) != "old" {
		t.Fatal("the old copy is not whole")
	}
}

// TestWriteDirSyncs: every file and directory of the new copy is fsynced
// before the rename, the parent after it.
func TestWriteDirSyncs(t *testing.T) {
	r := record(t)
	parent := t.TempDir()
	dir := filepath.Join(parent, "merged")
	if err := WriteDir(dir, nil, fillWith(map[string]string{"config.json": "{}", "shards/model.safetensors": "w"})); err != nil {
		t.Fatal(err)
	}
	ren := r.index("rename ")
	if ren < 0 {
		t.Fatalf("no rename: %q", r.events)
	}
	tmp := strings.Fields(r.events[ren])[1]
	for _, want := range []string{
		"fsync " + filepath.Join(tmp, "config.json"),
		"fsync " + filepath.Join(tmp, "shards", "model.safetensors"),
		"fsync-dir " + tmp,
		"fsync-dir " + filepath.Join(tmp, "shards"),
	} {
		if i := r.index(want); i < 0 || i > ren {
			t.Errorf("want %q before the rename; got %q", want, r.events)
		}
	}
	if i := slices.Index(r.events, "fsync-dir "+parent); i < ren {
		t.Errorf("want the parent %s fsynced after the rename; got %q", parent, r.events)
	}
}
