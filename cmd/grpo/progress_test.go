package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model/hub"
	"github.com/grpo-dev/grpo/trainer"
)

// TestDownloadProgressBar: a download drawn from the hub's progress reports
// shows the file, its size in SI units (300000 bytes is "300 kB") and 100%
// at the end.
func TestDownloadProgressBar(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	weights := make([]byte, 300_000)
	rand.New(rand.NewSource(1)).Read(weights)
	sum := sha256.Sum256(weights)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/Org/Tiny/resolve/main/model.safetensors" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Repo-Commit", commit)
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(weights)))
		if r.Method == http.MethodGet {
			w.Write(weights)
		}
	}))
	defer srv.Close()
	var progress bytes.Buffer
	opts := hub.Options{Endpoint: srv.URL, CacheDir: t.TempDir(), Token: "-", Progress: newDownloadProgress(&progress)}
	if _, err := hub.DownloadFile(context.Background(), "Org/Tiny", "model.safetensors", opts); err != nil {
		t.Fatal(err)
	}
	out := progress.String()
	// progressbar renders sizes in SI units: 300000 bytes is "300 kB".
	if !strings.Contains(out, "model.safetensors") || !strings.Contains(out, "100%") || !strings.Contains(out, "300/300 kB") {
		t.Fatalf("progress output %q", out)
	}
}

// TestTrainProgress: the trainer's lines are printed as they are; on a
// terminal the bar follows with the step count and the latest reward, and
// is cleared at the end.
func TestTrainProgress(t *testing.T) {
	events := []trainer.ProgressEvent{
		{Kind: trainer.ProgressStart, Step: 2, MaxSteps: 10},
		{Kind: trainer.ProgressNote, Step: 2, MaxSteps: 10, Line: "warning: all rewards equal"},
		{Kind: trainer.ProgressStep, Step: 3, MaxSteps: 10, Line: "step    3  reward 0.500", Metrics: map[string]float64{"reward": 0.5, "tokens_per_s": 1234}},
		{Kind: trainer.ProgressEnd, Step: 3, MaxSteps: 10},
	}
	var plain bytes.Buffer
	p := &trainBar{w: &plain}
	for _, e := range events {
		p.draw(e)
	}
	if got, want := plain.String(), "warning: all rewards equal\nstep    3  reward 0.500\n"; got != want {
		t.Fatalf("not a terminal: got %q, want the lines alone %q", got, want)
	}
	var tty bytes.Buffer
	p = &trainBar{w: &tty, tty: true}
	for _, e := range events {
		p.draw(e)
	}
	out := tty.String()
	for _, want := range []string{"train", "(2/10", "warning: all rewards equal\n", "step    3  reward 0.500\n", "reward 0.500  1234 tok/s", "(3/10"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
	if p.bar != nil {
		t.Error("the bar outlived the run")
	}
}
