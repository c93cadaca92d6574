package custom

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
)

// FuzzCustomConfig: environment.toml comes from users and from downloaded
// environments; any bytes must give a config that passed every check or an
// error naming the file, never a panic.
func FuzzCustomConfig(f *testing.F) {
	f.Add(capitalsTOML)
	if demo, err := os.ReadFile("../examples/demo/env/environment.toml"); err == nil {
		f.Add(string(demo))
	}
	for _, edit := range []string{"[[rubric]]", "[dataset]", `parser = "xml:answer"`, "weight = 1.0"} {
		f.Add(strings.Replace(capitalsTOML, edit, edit+"\n"+edit, 1))
	}
	f.Add("\xEF\xBB\xBFid = \"x\"\n")
	f.Add(`id = "a/b"` + "\n[dataset]\ntrain = \"../../etc/passwd\"\n[[rubric]]\ntype = \"exact\"\n")
	f.Fuzz(func(t *testing.T, src string) {
		const path = "env/environment.toml"
		c, err := parseCustomConfig(path, []byte(src))
		if err != nil {
			if !strings.HasPrefix(err.Error(), path) {
				t.Fatalf("error does not name the file: %q", err)
			}
			return
		}
		if c.ID == "" || !env.ValidID(c.ID) || !parserRe.MatchString(c.Parser) || len(c.Rubric) == 0 || c.PromptTemplate == "" {
			t.Fatalf("accepted a config that fails its own checks: %+v", c)
		}
		for _, p := range []string{c.Dataset.Train, c.Dataset.Eval} {
			// "..0" is a file in the environment, not its parent: the
			// question is filepath.IsLocal's, not a prefix's.
			if p != "" && !filepath.IsLocal(filepath.FromSlash(p)) {
				t.Fatalf("accepted a dataset path outside the environment: %q", p)
			}
		}
	})
}
