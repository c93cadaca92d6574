package loader

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// openSteps are the calls that open part of a model for use; outside this
// package each is a bypass of Open, unless allowed below.
var openSteps = map[string][]string{
	"github.com/grpo-dev/grpo/model":     {"Load"},
	"github.com/grpo-dev/grpo/tokenizer": {"Load"},
	"github.com/grpo-dev/grpo/model/hub": {"Resolve"},
	"github.com/grpo-dev/grpo/lora":      {"Load"},
}

// allowedSteps are the non-test files that may make those calls, each for
// a reason other than opening a model for use. An entry whose file no
// longer makes the call fails the test too, so the list stays true.
var allowedSteps = map[string]struct {
	calls []string
	why   string
}{
	"cmd/grpo/tokenize.go":         {[]string{"tokenizer.Load"}, "grpo tokenize reads the tokenizer alone; no model is opened"},
	"cmd/grpo/merge.go":            {[]string{"lora.Load"}, "grpo merge checks the adapter against the model's shapes (config.json alone) and merges file by file; no weights are loaded"},
	"trainer/checkpoint.go":        {[]string{"lora.Load"}, "resume restores a checkpoint's training adapter onto the base model the loader opened"},
	"env/hub.go":                   {[]string{"hub.Resolve"}, "resolves environment dataset repositories, not models"},
	"estimate/run.go":              {[]string{"hub.Resolve", "tokenizer.Load", "model.Load"}, "the estimate reads a model's shape without opening it (resolved offline, config.json alone when not downloaded, an unreadable tokenizer only a note); its warm-up times local weights, never uses them"},
	"internal/modeltest/logits.go": {[]string{"model.Load"}, "test helper: loads one model on two backends to compare them"},
	"internal/modeltest/grads.go":  {[]string{"model.Load"}, "test helper: loads one model on two backends to compare them"},
}

// TestNothingBypassesOpen parses every non-test Go file of the module
// (every build tag) and fails on a call to an open step outside this
// package that allowedSteps does not name.
func TestNothingBypassesOpen(t *testing.T) {
	root := moduleRoot(t)
	seen := map[string]map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "loader/") {
			return nil
		}
		for _, call := range openCalls(t, path) {
			if seen[rel] == nil {
				seen[rel] = map[string]bool{}
			}
			seen[rel][call.name] = true
			if !allowed(rel, call.name) {
				t.Errorf("%s:%d calls %s: open the model with loader.Open (or add the file to allowedSteps with the reason it opens no model)", rel, call.line, call.name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for f := range allowedSteps {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		for _, c := range allowedSteps[f].calls {
			if !seen[f][c] {
				t.Errorf("allowedSteps: %s no longer calls %s; drop it from the list", f, c)
			}
		}
	}
}

func allowed(file, call string) bool {
	for _, c := range allowedSteps[file].calls {
		if c == call {
			return true
		}
	}
	return false
}

type openCall struct {
	name string // as written with the package's own name: model.Load
	line int
}

// openCalls finds the open steps path calls, whatever name it imports
// their packages under.
func openCalls(t *testing.T, path string) []openCall {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	local := map[string]string{} // local import name → import path
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if _, ok := openSteps[p]; !ok {
			continue
		}
		n := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			n = im.Name.Name
		}
		local[n] = p
	}
	var out []openCall
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		p, ok := local[id.Name]
		if !ok {
			return true
		}
		for _, fn := range openSteps[p] {
			if sel.Sel.Name == fn {
				// Named by the package's own name, so the list reads
				// the same whatever the file imports it as.
				out = append(out, openCall{p[strings.LastIndex(p, "/")+1:] + "." + fn, fset.Position(sel.Pos()).Line})
			}
		}
		return true
	})
	return out
}

func moduleRoot(t *testing.T) string {
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod above the loader package: %v", err)
	}
	return dir
}
