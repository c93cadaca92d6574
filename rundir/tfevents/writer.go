// Package tfevents writes TensorBoard event files: TFRecord-framed Event
// protos holding each step's scalars, the format TensorBoard and
// `wandb sync --sync-tensorboard` read.
package tfevents

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Writer appends events to one events file.
type Writer struct {
	f    *os.File
	path string
}

// FileName is TensorFlow's name for an events file,
// events.out.tfevents.<10-digit unix seconds>.<host>
// (tensorflow/core/util/events_writer.cc); TensorBoard reads every file
// whose name contains "tfevents", in name order.
func FileName(now time.Time, host string) string {
	return fmt.Sprintf("events.out.tfevents.%010d.%s", now.Unix(), host)
}

// Create starts a new events file in dir and writes the file_version
// event. A resumed run calls it again and gets a second file (with a
// ".N" suffix if one of that second exists already): TensorBoard reads
// them all as one run.
func Create(dir string, now time.Time, host string) (*Writer, error) {
	name := FileName(now, host)
	path := filepath.Join(dir, name)
	for i := 1; ; i++ {
		if _, err := os.Lstat(path); os.IsNotExist(err) {
			break
		}
		path = filepath.Join(dir, fmt.Sprintf("%s.%d", name, i))
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tensorboard events: %w", err)
	}
	w := &Writer{f: f, path: path}
	if err := w.write(versionEvent(wallTime(now))); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Path is the events file.
func (w *Writer) Path() string { return w.path }

// Scalars writes one event with a simple_value per tag at step and syncs
// the file, so a killed run keeps every finished step.
func (w *Writer) Scalars(now time.Time, step int, scalars map[string]float64) error {
	return w.write(scalarEvent(wallTime(now), int64(step), scalars))
}

// Restart marks that the run continues at step after a resume; events of
// step and later in older files are superseded.
func (w *Writer) Restart(now time.Time, step int) error {
	return w.write(startEvent(wallTime(now), int64(step), fmt.Sprintf("resumed at step %d", step)))
}

func (w *Writer) write(event []byte) error {
	if err := writeRecord(w.f, event); err != nil {
		return fmt.Errorf("tensorboard events %s: %w", w.path, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("tensorboard events %s: %w", w.path, err)
	}
	return nil
}

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }

func wallTime(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }
