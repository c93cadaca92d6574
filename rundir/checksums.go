package rundir

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// ChecksumsFile lists the sha256 of every other file of a checkpoint, in
// sha256sum's format (`sha256sum -c checksums.sha256` checks it by hand).
// A file that changed after it was written (a flipped bit on disk, a
// partial copy) is found at resume, where a truncation would show only
// if it broke the file's format.
const ChecksumsFile = "checksums.sha256"

// WriteChecksums hashes every file under dir into dir/checksums.sha256.
func WriteChecksums(dir string) error {
	sums, err := hashTree(dir)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	return atomicfile.WriteFile(filepath.Join(dir, ChecksumsFile), b.Bytes(), 0o644)
}

// VerifyChecksums checks every file checksums.sha256 lists; the error is
// one line naming the first file that is missing or differs.
func VerifyChecksums(dir string) error {
	f, err := os.Open(filepath.Join(dir, ChecksumsFile))
	if err != nil {
		return fmt.Errorf("%s is missing", ChecksumsFile)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(want) != 64 || name == "" || !filepath.IsLocal(name) {
			return fmt.Errorf("%s line %d is not `SHA256  FILE`", ChecksumsFile, n+1)
		}
		n++
		got, err := hashFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return fmt.Errorf("%s, listed in %s, cannot be read: %v", name, ChecksumsFile, err)
		}
		if got != want {
			return fmt.Errorf("%s does not match its sha256 in %s: the file changed after the checkpoint was written", name, ChecksumsFile)
		}
	}
	if err := sc.Err(); err != nil || n == 0 {
		return fmt.Errorf("%s lists no files", ChecksumsFile)
	}
	return nil
}

// hashTree is the sha256 of every regular file under dir but the
// checksums file, by slash-separated path.
func hashTree(dir string) (map[string]string, error) {
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ChecksumsFile {
			return nil
		}
		sum, err := hashFile(p)
		sums[filepath.ToSlash(rel)] = sum
		return err
	})
	return sums, err
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
