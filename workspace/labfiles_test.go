package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/examples"
)

// grpoOwn are the workspace files that are grpo's, not copies of Lab's.
var grpoOwn = []string{"AGENTS.local.md", "configs/endpoints.toml", "environments/capitals/"}

// TestLabFilesVerbatim: every file grpo init copies from Lab is listed in
// examples/LAB_FILES.md with its source, and is byte for byte the file
// whose sha256 the list records; every other workspace file is grpo's own.
func TestLabFilesVerbatim(t *testing.T) {
	doc, err := os.ReadFile("../examples/LAB_FILES.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || len(strings.TrimSpace(cells[3])) != 64 {
			continue
		}
		listed[strings.TrimSpace(cells[1])] = strings.TrimSpace(cells[3])
	}
	if len(listed) < 20 {
		t.Fatalf("LAB_FILES.md lists %d files", len(listed))
	}
	seen := 0
	fs.WalkDir(examples.Workspace(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		for _, own := range grpoOwn {
			if strings.HasPrefix(p, own) {
				return nil
			}
		}
		want, ok := listed[p]
		if !ok {
			t.Errorf("%s is neither listed in LAB_FILES.md nor one of grpo's own files", p)
			return nil
		}
		seen++
		data, _ := fs.ReadFile(examples.Workspace(), p)
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != want {
			t.Errorf("%s differs from the Lab file LAB_FILES.md records (sha256 %s, listed %s): copy it again, do not edit it", p, hex.EncodeToString(sum[:]), want)
		}
		return nil
	})
	if seen != len(listed) {
		t.Errorf("LAB_FILES.md lists %d files, the workspace holds %d of them", len(listed), seen)
	}
}
