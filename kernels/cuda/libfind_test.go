package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLibCandidates builds a machine in a temporary directory — cuBLAS
// only in a pip wheel of a python on PATH, another in a CUDA toolkit, one
// named by GRPO_CUBLAS, one on LD_LIBRARY_PATH, one in the loader cache —
// and checks the search finds each, in the documented order.
func TestLibCandidates(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	override := mk("override/libcublas.so.12")
	ldpath := mk("ld/libcublas.so.13")
	cached := mk("cache/libcublas.so.12")
	toolkit := mk("usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublas.so.13")
	wheel := mk("venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13")
	mk("venv/bin/python3.12")
	mk("venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublasLt.so.13")
	env := map[string]string{
		"GRPO_CUBLAS":     filepath.Dir(override),
		"LD_LIBRARY_PATH": filepath.Join(root, "ld") + ":" + filepath.Join(root, "missing"),
		"PATH":            "/nonexistent:" + filepath.Join(root, "venv/bin"),
	}
	s := libSearch{
		getenv: func(k string) string { return env[k] },
		glob:   filepath.Glob,
		ldconfig: func() string {
			return "123 libs found in cache `/etc/ld.so.cache'\n\tlibcublas.so.12 (libc6,x86-64) => " + cached + "\n"
		},
		stat: func(p string) bool { fi, err := os.Stat(p); return err == nil && !fi.IsDir() },
		root: root,
	}
	got := s.libCandidates("GRPO_CUBLAS", cublasNames)
	want := []string{override, ldpath, cached, toolkit, wheel}
	if len(got) < len(want)+len(cublasNames) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("candidates:\n  %s\nwant first:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if !slices.Equal(got[len(got)-len(cublasNames):], cublasNames) {
		t.Errorf("the bare sonames should come last: %v", got)
	}
	if lt := cublasLtFor(wheel); lt != filepath.Join(filepath.Dir(wheel), "libcublasLt.so.13") {
		t.Errorf("cublasLtFor(%s) = %s", wheel, lt)
	}
	// A file named by the override comes first, alone.
	env["GRPO_CUBLAS"] = wheel
	if got := s.libCandidates("GRPO_CUBLAS", cublasNames); got[0] != wheel {
		t.Errorf("GRPO_CUBLAS naming a file: first candidate %s", got[0])
	}
}

// TestOpenFirstNamesEveryPlace: when nothing loads, the error lists every
// candidate with the loader's own reason.
func TestOpenFirstNamesEveryPlace(t *testing.T) {
	cands := []string{"/a/libcublas.so.13", "libcublas.so.12"}
	_, err := openFirst("cuBLAS", cands, func(p string) error {
		return errors.New(p + ": cannot open shared object file: No such file or directory")
	})
	if err == nil {
		t.Fatal("no error")
	}
	for _, c := range cands {
		if !strings.Contains(err.Error(), c+": "+c+": cannot open shared object file") {
			t.Errorf("error does not name %s with its dlerror:\n%v", c, err)
		}
	}
	p, err := openFirst("cuBLAS", cands, func(p string) error {
		if p == cands[1] {
			return nil
		}
		return errors.New("wrong ELF class")
	})
	if err != nil || p != cands[1] {
		t.Errorf("openFirst = %q, %v; want the second candidate", p, err)
	}
}

// TestLibCandidatesFollowLinkedPython: a python on PATH that is a link
// into another install (here bin/python3 → opt/py/bin/python3.12) has its
// wheels found under that install's prefix, where the link's own
// directory would miss them.
func TestLibCandidatesFollowLinkedPython(t *testing.T) {
	root := t.TempDir()
	wheel := filepath.Join(root, "opt/py/lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.12")
	real := filepath.Join(root, "opt/py/bin/python3.12")
	for _, p := range []string{wheel, real} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "links/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(root, "links/bin/python3")); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PATH": filepath.Join(root, "links/bin")}
	s := libSearch{
		getenv:   func(k string) string { return env[k] },
		glob:     filepath.Glob,
		ldconfig: func() string { return "" },
		stat:     func(p string) bool { fi, err := os.Stat(p); return err == nil && !fi.IsDir() },
		root:     root,
	}
	if got := s.libCandidates("GRPO_CUBLAS", cublasNames); !slices.Contains(got, wheel) {
		t.Errorf("candidates %v lack the linked python's wheel %s", got, wheel)
	}
}

// TestNCCLCandidates: NCCL is found as cuBLAS is — GRPO_NCCL_LIB first,
// then the loader cache, then the nvidia-nccl-cu12 wheel of a python on
// PATH (nvidia/nccl/lib), the bare sonames last; a cuBLAS beside it is not
// a candidate.
func TestNCCLCandidates(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	override := mk("override/libnccl.so.2")
	cached := mk("cache/libnccl.so.2")
	wheel := mk("venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2")
	mk("venv/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.12")
	mk("venv/bin/python3")
	env := map[string]string{ncclOverride: filepath.Dir(override), "PATH": filepath.Join(root, "venv/bin")}
	s := libSearch{
		getenv: func(k string) string { return env[k] },
		glob:   filepath.Glob,
		ldconfig: func() string {
			return "\tlibnccl.so.2 (libc6,x86-64) => " + cached + "\n\tlibcublas.so.12 (libc6,x86-64) => /elsewhere/libcublas.so.12\n"
		},
		stat: func(p string) bool { fi, err := os.Stat(p); return err == nil && !fi.IsDir() },
		root: root,
	}
	got := s.libCandidates(ncclOverride, ncclNames)
	want := append([]string{override, cached, wheel}, ncclNames...)
	if !slices.Equal(got, want) {
		t.Fatalf("candidates:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	env[ncclOverride] = wheel
	delete(env, "PATH")
	if got := s.libCandidates(ncclOverride, ncclNames); got[0] != wheel || slices.Contains(got, override) {
		t.Errorf("GRPO_NCCL_LIB naming a file: %v", got)
	}
}
