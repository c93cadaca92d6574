package wandb

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/grpo-dev/grpo/internal/atomicfile"
)

// localRun is the run's directory under <run dir>/wandb/, laid out as the
// W&B SDK lays out its own (wandb/sdk/wandb_settings.py, sync/sync.py):
//
//	offline-run-<YYYYMMDD_HHMMSS>-<id>/   (run-… when it was also streamed)
//	  run-<id>.wandb                      the record log `wandb sync` replays
//	  files/                              files the records name (the plot)
//
// `wandb sync` takes the directory (or the .wandb file), wants exactly
// one .wandb file in it and reads the date from the name.
type localRun struct {
	dir string
	f   *os.File
	log *logWriter
	num int64
}

func dirName(offline bool, start time.Time, id string) string {
	prefix := "run-"
	if offline {
		prefix = "offline-run-"
	}
	return prefix + start.Format("20060102_150405") + "-" + id
}

func createLocal(root string, offline bool, start time.Time, id string) (*localRun, error) {
	// A run resumed within the second its last process started would get
	// that one's name; the name's time moves on to the next free second
	// instead, since the format has no room for a counter.
	dir := filepath.Join(root, dirName(offline, start, id))
	for {
		if err := os.Mkdir(dir, 0o755); err == nil {
			break
		} else if !os.IsExist(err) {
			return nil, err
		}
		start = start.Add(time.Second)
		dir = filepath.Join(root, dirName(offline, start, id))
	}
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "run-"+id+".wandb"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	l, err := newLogWriter(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &localRun{dir: dir, f: f, log: l}, nil
}

// add appends a record built for the next record number and syncs, so a
// killed run leaves every record it logged for `wandb sync`.
func (l *localRun) add(build func(num int64) []byte) error {
	l.num++
	if err := l.log.write(build(l.num)); err != nil {
		return fmt.Errorf("W&B run %s: %w", l.dir, err)
	}
	return l.f.Sync()
}

// saveFile writes data as files/<rel> of the run.
func (l *localRun) saveFile(rel string, data []byte) error {
	p := filepath.Join(l.dir, "files", filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(p, data, 0o644)
}

// saveSummary writes files/wandb-summary.json, as the SDK keeps it beside
// the log (sync rewrites it from the summary record).
func (l *localRun) saveSummary(summary map[string]any) error {
	b, err := json.Marshal(summary)
	if err != nil {
		return err
	}
	return l.saveFile("wandb-summary.json", b)
}

func (l *localRun) close() error { return l.f.Close() }
