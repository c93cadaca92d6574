package rundir

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Find resolves a RUN argument (grpo runs status RUN): a run directory as
// given, or a run's name under dir. Not found, the error lists the runs in
// dir (read with readConfig, as List does), or says how to start one.
func Find(arg, dir string, readConfig ConfigReader) (string, error) {
	for _, p := range []string{arg, filepath.Join(dir, arg)} {
		if Is(p) {
			return p, nil
		}
	}
	var names []string
	if runs, err := List(dir, time.Now(), readConfig); err == nil {
		for _, r := range runs {
			names = append(names, r.Name)
		}
	}
	msg := fmt.Sprintf("run %q not found: neither it nor %s is a run directory", arg, filepath.Join(dir, arg))
	if len(names) > 0 {
		msg += "; runs in " + dir + ": " + strings.Join(names, ", ")
	} else {
		msg += "; start one with grpo train CONFIG.toml"
	}
	return "", fmt.Errorf("%s", msg)
}
