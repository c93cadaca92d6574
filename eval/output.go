package eval

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// DefaultOutput is where grpo eval writes the results of target (an
// environment id or an eval config's path) without --output:
// eval-<name>-<time>.jsonl in the working directory, the name made safe
// for a file name.
func DefaultOutput(target string, now time.Time) string {
	name := target
	if strings.HasSuffix(target, ".toml") {
		name = strings.TrimSuffix(filepath.Base(target), ".toml")
	}
	return fmt.Sprintf("eval-%s-%s.jsonl", strings.NewReplacer("/", "-", "\\", "-", ":", "-").Replace(name), now.Format("20060102-150405"))
}
