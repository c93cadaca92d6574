package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Where a shared library of the CUDA stack may be on a machine: the lent
// GPU machines have cuBLAS only inside PyTorch's pip wheels
// (…/site-packages/nvidia/cu13/lib, nvidia/cublas/lib), not on the loader's
// path, and NVIDIA's installers put it under /usr/local/cuda*. The backend
// dlopens cuBLAS by full path from this list (cublas_cuda.go); libcuda is
// linked, so scripts/gpu-check.sh runs the same search in shell and puts
// what it finds on LD_LIBRARY_PATH before starting a binary.

// libSearch holds what the search reads from the machine, so tests can give
// it a made-up one.
type libSearch struct {
	getenv   func(string) string
	glob     func(string) ([]string, error)
	ldconfig func() string // `ldconfig -p` output, "" if unavailable
	stat     func(string) bool
	root     string // prefix of the fixed system paths ("" but in tests)
}

func osLibSearch() libSearch {
	return libSearch{
		getenv: os.Getenv,
		glob:   filepath.Glob,
		ldconfig: func() string {
			for _, p := range []string{"ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"} {
				if out, err := exec.Command(p, "-p").Output(); err == nil {
					return string(out)
				}
			}
			return ""
		},
		stat: func(p string) bool { fi, err := os.Stat(p); return err == nil && !fi.IsDir() },
	}
}

// libCandidates returns the files to try, in order, for a library known by
// names (most preferred first, e.g. libcublas.so.13, .12, .11): the file or
// directory in the override variable, then each directory of
// LD_LIBRARY_PATH, the loader cache (ldconfig -p), the CUDA toolkit
// directories, the pip wheels of every Python on the machine, and last the
// bare names (dlopen's own search). Only existing files are listed, except
// the bare names; each appears once.
func (s libSearch) libCandidates(override string, names []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	inDir := func(dir string) {
		for _, n := range names {
			if p := filepath.Join(dir, n); s.stat(p) {
				add(p)
			}
		}
	}
	if v := s.getenv(override); v != "" {
		if s.stat(v) {
			add(v)
		} else {
			inDir(v)
		}
	}
	for _, dir := range filepath.SplitList(s.getenv("LD_LIBRARY_PATH")) {
		if dir != "" {
			inDir(dir)
		}
	}
	// ldconfig -p: "\tlibcublas.so.12 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcublas.so.12"
	cache := map[string][]string{}
	for _, line := range strings.Split(s.ldconfig(), "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), " ")
		_, path, ok2 := strings.Cut(rest, "=> ")
		if ok && ok2 {
			cache[name] = append(cache[name], strings.TrimSpace(path))
		}
	}
	for _, n := range names {
		for _, p := range cache[n] {
			add(p)
		}
	}
	for _, dir := range s.libDirs() {
		inDir(dir)
	}
	for _, n := range names {
		add(n)
	}
	return out
}

// libDirs lists the toolkit and pip-wheel directories that exist.
func (s libSearch) libDirs() []string {
	arch := map[string]string{"amd64": "x86_64-linux", "arm64": "sbsa-linux"}[runtime.GOARCH]
	var pats []string
	for _, p := range []string{"/usr/local/cuda/lib64", "/usr/local/cuda-*/lib64",
		"/usr/local/cuda/targets/" + arch + "/lib", "/usr/local/cuda-*/targets/" + arch + "/lib",
		"/usr/lib/x86_64-linux-gnu", "/usr/lib/wsl/lib"} {
		pats = append(pats, s.root+p)
	}
	// Python installs: every python on PATH (its prefix is the bin
	// directory's parent), virtualenvs and conda, the user's ~/.local and
	// the system's; the wheels' libraries sit in nvidia/*/lib
	// (nvidia/cublas/lib for CUDA 12, nvidia/cu13/lib for CUDA 13).
	prefixes := []string{s.root + "/usr", s.root + "/usr/local", s.root + "/opt/conda", s.getenv("VIRTUAL_ENV"), s.getenv("CONDA_PREFIX")}
	if h := s.getenv("HOME"); h != "" {
		prefixes = append(prefixes, filepath.Join(h, ".local"))
	}
	for _, dir := range filepath.SplitList(s.getenv("PATH")) {
		py, _ := s.glob(filepath.Join(dir, "python3*"))
		if len(py) > 0 {
			prefixes = append(prefixes, filepath.Dir(dir))
		}
		// A python on PATH may be a link into another install
		// (/usr/local/bin/python3 → /opt/python/3.12/bin/python3.12), whose
		// wheels are under that install's prefix.
		for _, p := range py {
			if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
				prefixes = append(prefixes, filepath.Dir(filepath.Dir(r)))
			}
		}
	}
	for _, p := range prefixes {
		if p == "" {
			continue
		}
		for _, sp := range []string{"site-packages", "dist-packages"} {
			pats = append(pats, filepath.Join(p, "lib", "python3*", sp, "nvidia", "*", "lib"),
				filepath.Join(p, "lib", "python3", sp, "nvidia", "*", "lib"))
		}
	}
	var dirs []string
	seen := map[string]bool{}
	for _, pat := range pats {
		m, _ := s.glob(pat)
		sort.Sort(sort.Reverse(sort.StringSlice(m))) // newest toolkit / python first
		for _, d := range m {
			if !seen[d] {
				seen[d] = true
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}

// cublasNames are the cuBLAS sonames the backend accepts, newest first; the
// binding's entry points have the same C ABI in all of them.
var cublasNames = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}

// cublasLtFor returns the cublasLt library that belongs beside a cuBLAS
// candidate (same directory, same soname suffix), which cuBLAS needs and
// finds through its RUNPATH only where the wheel set one.
func cublasLtFor(cublas string) string {
	dir, base := filepath.Split(cublas)
	return dir + strings.Replace(base, "libcublas.", "libcublasLt.", 1)
}

// openFirst tries each candidate with open and returns the first that
// loads; otherwise an error naming every candidate with open's reason
// (dlerror's text).
func openFirst(what string, candidates []string, open func(string) error) (string, error) {
	var tried []string
	for _, c := range candidates {
		err := open(c)
		if err == nil {
			return c, nil
		}
		tried = append(tried, "  "+c+": "+err.Error())
	}
	return "", &libError{what: what, tried: tried}
}

type libError struct {
	what  string
	tried []string
}

func (e *libError) Error() string {
	if len(e.tried) == 0 {
		return "cuda: cannot load " + e.what + ": no candidates"
	}
	return "cuda: cannot load " + e.what + "; tried, in order:\n" + strings.Join(e.tried, "\n")
}

// ncclNames are the NCCL sonames the collectives accept (nccl_cuda.go):
// libnccl.so.2 is NCCL 2's, from the nvidia-nccl-cu12/cu13 wheels
// (nvidia/nccl/lib, found by libDirs' nvidia/*/lib), Debian's or NVIDIA's
// libnccl2 package (the loader cache) or GRPO_NCCL_LIB.
var ncclNames = []string{"libnccl.so.2", "libnccl.so"}

// ncclOverride is the variable naming NCCL's file or directory.
const ncclOverride = "GRPO_NCCL_LIB"
