package tfevents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/internal/logread"
)

func TestEventsRoundTripThroughIndependentReader(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Unix(1700000000, 250_000_000)
	w, err := Create(dir, t0, "host1")
	if err != nil {
		t.Fatal(err)
	}
	if got := filepath.Base(w.Path()); got != "events.out.tfevents.1700000000.host1" {
		t.Errorf("file name %q", got)
	}
	rewards := []float64{0.125, 0, 0.5, 0.75}
	for i, r := range rewards {
		if err := w.Scalars(t0.Add(time.Duration(i)*time.Second), i+1, map[string]float64{"reward": r, "loss": -float64(i), "env/rt/reward": r / 2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := logread.ReadEvents(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1+len(rewards) || evs[0].FileVersion != "brain.Event:2" || evs[0].WallTime != 1700000000.25 {
		t.Fatalf("first event %+v of %d", evs[0], len(evs))
	}
	for i, r := range rewards {
		ev := evs[i+1]
		if ev.Step != int64(i+1) || ev.Scalars["reward"] != float32(r) || ev.Scalars["env/rt/reward"] != float32(r/2) || ev.Scalars["loss"] != float32(-i) {
			t.Errorf("step %d: %+v", i+1, ev)
		}
		if ev.WallTime != 1700000000.25+float64(i) {
			t.Errorf("step %d wall time %v", i+1, ev.WallTime)
		}
	}

	// Every byte is covered by a checksum: flipping any one of them makes
	// the reader fail rather than return other numbers.
	good, _ := os.ReadFile(w.Path())
	for _, off := range []int{0, 9, 14, len(good) / 2, len(good) - 1} {
		bad := append([]byte(nil), good...)
		bad[off] ^= 0x20
		p := filepath.Join(dir, "corrupt")
		os.WriteFile(p, bad, 0o644)
		if _, err := logread.ReadEvents(p); err == nil {
			t.Errorf("byte %d flipped: read without error", off)
		}
	}
}

func TestResumedRunGetsSecondFileWithRestart(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Unix(1700000000, 0)
	a, err := Create(dir, t0, "h")
	if err != nil {
		t.Fatal(err)
	}
	a.Scalars(t0, 1, map[string]float64{"reward": 1})
	a.Close()
	b, err := Create(dir, t0, "h") // same second: must not overwrite the first
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Restart(t0, 2); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if b.Path() == a.Path() || !strings.HasPrefix(filepath.Base(b.Path()), filepath.Base(a.Path())) {
		t.Fatalf("second file %s beside %s", b.Path(), a.Path())
	}
	for _, p := range []string{a.Path(), b.Path()} {
		if evs, err := logread.ReadEvents(p); err != nil || evs[0].FileVersion == "" {
			t.Fatalf("%s: %v %+v", p, err, evs)
		}
	}
	evs, _ := logread.ReadEvents(b.Path())
	if len(evs) != 2 || !evs[1].SessionStart || evs[1].Step != 2 {
		t.Errorf("restart event %+v", evs)
	}
}
