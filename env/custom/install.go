package custom

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// The registry asks for installed environments after those registered
// from Go and before Python modules (package pyenv's finder).
func init() {
	env.RegisterFinder(env.Finder{
		Order: 10,
		Find:  func(id string, _ env.Options) (env.Spec, error) { return findInstalled(id) },
		List:  listInstalled,
	})
}

// Home is grpo's user directory: $GRPO_HOME, else ~/.grpo.
func Home() string {
	if h := os.Getenv("GRPO_HOME"); h != "" {
		return h
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".grpo"
	}
	return filepath.Join(home, ".grpo")
}

// InstallDir is where `grpo env install` puts environments.
func InstallDir() string { return filepath.Join(Home(), "environments") }

// EnvironmentDirs are searched, in order, for installed environments: the
// workspace's ./environments (which `grpo init` creates), then InstallDir.
func EnvironmentDirs() []string {
	return []string{"environments", InstallDir()}
}

// findInstalled finds environment id: id itself as a directory holding an
// environment.toml, else <dir>/<id>/environment.toml in EnvironmentDirs,
// else any installed environment whose config declares that id.
func findInstalled(id string) (env.Spec, error) {
	if fileExists(filepath.Join(id, ConfigFile)) {
		return LoadDir(id)
	}
	if env.ValidID(id) {
		for _, d := range EnvironmentDirs() {
			dir := filepath.Join(d, filepath.FromSlash(id))
			if fileExists(filepath.Join(dir, ConfigFile)) {
				return LoadDir(dir)
			}
		}
	}
	for _, s := range listInstalled() {
		if env.FoldID(s.ID) == env.FoldID(id) {
			return s, nil
		}
	}
	return env.Spec{}, env.ErrNotFound
}

// listInstalled returns the environments found in EnvironmentDirs (at
// most two levels deep, for owner/name ids), the first of each id winning.
func listInstalled() []env.Spec {
	var out []env.Spec
	seen := map[string]bool{}
	for _, d := range EnvironmentDirs() {
		var dirs []string
		for _, pat := range []string{"*", "*/*"} {
			m, _ := filepath.Glob(filepath.Join(d, pat, ConfigFile))
			dirs = append(dirs, m...)
		}
		sort.Strings(dirs)
		for _, cfgPath := range dirs {
			s, err := LoadDir(filepath.Dir(cfgPath))
			if err != nil || seen[env.FoldID(s.ID)] {
				continue
			}
			seen[env.FoldID(s.ID)] = true
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Install checks the environment in src (its config parses, its rubric
// builds and its training data loads) and copies the directory to
// InstallDir()/<id>. An existing installation is replaced only when
// replace is set. It returns the new directory. opts are the settings
// its data loads with.
func Install(src string, replace bool, opts ...env.Option) (string, error) {
	spec, err := LoadDir(src)
	if err != nil {
		return "", err
	}
	e, err := spec.New(env.Args{"num_train_examples": -1, "num_eval_examples": -1, "system_prompt": ""}, env.Apply(opts...))
	if err != nil {
		return "", fmt.Errorf("env %s: %w", spec.ID, err)
	}
	if _, err := e.Examples("train"); err != nil {
		return "", err
	}
	if _, err := e.Examples("eval"); err != nil && !errors.Is(err, env.ErrNoSplit) {
		return "", err
	}
	if _, builtin := env.Registered(spec.ID); builtin {
		return "", fmt.Errorf("env %s: the id is taken by a builtin; choose another id in %s", spec.ID, filepath.Join(src, ConfigFile))
	}
	dest := filepath.Join(InstallDir(), filepath.FromSlash(spec.ID))
	srcAbs, _ := filepath.Abs(src)
	destAbs, _ := filepath.Abs(dest)
	if srcAbs == destAbs {
		return dest, nil
	}
	if fileExists(dest) && !replace {
		return "", fmt.Errorf("env %s is already installed in %s; pass --force to replace it", spec.ID, dest)
	}
	// The copy is made beside the destination and swapped in, so an
	// interrupted install never leaves a half-copied environment.
	if err := atomicfile.WriteDir(dest, nil, func(tmp string) error {
		if err := copyTree(src, tmp); err != nil {
			return fmt.Errorf("install %s: %v", src, err)
		}
		return nil
	}); err != nil {
		return "", err
	}
	return dest, nil
}

// copyTree copies regular files and directories of src into dst (which
// exists); symlinks and other special files are refused, since an
// installed environment must not point back into the source tree.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir // .git, caches
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return atomicfile.CopyFile(target, p)
		}
		return fmt.Errorf("%s is a %s, not a regular file; replace it with a copy", p, d.Type())
	})
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readFileOrEmpty(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
