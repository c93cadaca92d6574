// Command gen writes the tiny Hugging Face-layout models under
// testdata/models/<name>/: config.json as transformers writes it for the
// architecture, and safetensors weights with the HF tensor names. Every
// weight comes from a fixed-seed PCG stream, so the output is identical on
// every machine and Go version, and the checked-in files can be verified:
//
//	go run ./testdata/gen            # (re)write testdata/models
//	go run ./testdata/gen -check     # regenerate in a temp dir, diff against testdata/models
//
// After regenerating, rerun testdata/reference/reference.py: the golden
// logits depend on these weights.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	out := flag.String("out", "testdata/models", "directory to write the model directories into")
	check := flag.Bool("check", false, "regenerate into a temporary directory and fail if anything differs from -out")
	flag.Parse()
	if err := run(*out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string, check bool) error {
	target := out
	if check {
		tmp, err := os.MkdirTemp("", "grpo-gen-check-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		target = tmp
	}
	for _, spec := range specs {
		dir := filepath.Join(target, spec.name)
		if err := writeModel(dir, spec); err != nil {
			return fmt.Errorf("%s: %v", spec.name, err)
		}
		if !check {
			fmt.Printf("wrote %s\n", dir)
		}
	}
	if check {
		return compareTrees(target, out)
	}
	return nil
}

// compareTrees reports the first file of got that is missing from or
// differs from want.
func compareTrees(got, want string) error {
	return filepath.WalkDir(got, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(got, p)
		a, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(want, rel))
		if err != nil {
			return fmt.Errorf("%s: %v (run go run ./testdata/gen)", rel, err)
		}
		if !bytes.Equal(a, b) {
			return fmt.Errorf("%s differs from a fresh generation (run go run ./testdata/gen, then the reference script)", filepath.Join(want, rel))
		}
		return nil
	})
}
