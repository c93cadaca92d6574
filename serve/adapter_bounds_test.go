package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/lora"
)

// badAdapterDirs writes adapter directories that attack the loader, each
// beside the good adapter's other file: FIFOs (opening one blocks until a
// writer comes), /dev/zero (endless), files above the model's cap and
// above what the config's rank allows, and garbage. It returns them by
// name and the FIFOs, which the caller must unblock at the end (only a
// loader that opened one is waiting on it).
func badAdapterDirs(t *testing.T, limit int64) (dirs map[string]string, fifos []string) {
	t.Helper()
	good := goodAdapter(t)
	cfg, err := os.ReadFile(filepath.Join(good, lora.ConfigFileName))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dirs = map[string]string{}
	for _, c := range []struct {
		name     string
		file     string
		makeFile func(path string) error
	}{
		{"fifo config", lora.ConfigFileName, func(p string) error { fifos = append(fifos, p); return syscall.Mkfifo(p, 0o600) }},
		{"fifo weights", lora.WeightsFileName, func(p string) error { fifos = append(fifos, p); return syscall.Mkfifo(p, 0o600) }},
		{"zero config", lora.ConfigFileName, func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"zero weights", lora.WeightsFileName, func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"huge weights", lora.WeightsFileName, func(p string) error {
			f, err := os.Create(p)
			if err == nil {
				err = f.Truncate(limit + 1) // sparse: no disk used
				f.Close()
			}
			return err
		}},
		{"rank-sized weights", lora.WeightsFileName, func(p string) error {
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				return err
			}
			return os.Truncate(p, 4<<20) // within the model's cap, far above a rank-4 adapter's
		}},
		{"garbage weights", lora.WeightsFileName, func(p string) error {
			return os.WriteFile(p, []byte(strings.Repeat("\x7f\xff garbage ", 400)), 0o600)
		}},
	} {
		dir := filepath.Join(root, strings.ReplaceAll(c.name, " ", "-"))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if c.file != lora.ConfigFileName {
			if err := os.WriteFile(filepath.Join(dir, lora.ConfigFileName), cfg, 0o600); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Symlink(filepath.Join(good, lora.WeightsFileName), filepath.Join(dir, lora.WeightsFileName)); err != nil {
			t.Fatal(err)
		}
		if err := c.makeFile(filepath.Join(dir, c.file)); err != nil {
			t.Fatal(err)
		}
		dirs[c.name] = dir
	}
	return dirs, fifos
}

// unblockFIFOs opens each FIFO for writing and closes it, for a second,
// so a loader stuck in one (and the next one after it) sees end of file.
func unblockFIFOs(fifos []string) {
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		for _, p := range fifos {
			if fh, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				fh.Close()
			}
		}
	}
}

// TestBadAdapterFilesCannotStallTheServer: each attacking adapter is
// refused with a 400 naming lora_path within 5 s, while a completion is
// still answered within 5 s (issue 27: a FIFO stalled the scheduler
// goroutine, so every request waited forever; /dev/zero was read without
// end).
func TestBadAdapterFilesCannotStallTheServer(t *testing.T) {
	f := newFixture(t, Config{Slots: 2, MaxLen: 64})
	dirs, fifos := badAdapterDirs(t, f.srv.maxAdapterWeights)
	t.Cleanup(func() { unblockFIFOs(fifos) }) // runs before the fixture stops
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(path string, body any) (int, []byte, time.Duration) {
		data, _ := json.Marshal(body)
		start := time.Now()
		resp, err := client.Post(f.url+path, "application/json", strings.NewReader(string(data)))
		if err != nil {
			return 0, []byte(err.Error()), time.Since(start)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out, time.Since(start)
	}
	says := map[string]string{"fifo config": "not a regular file", "fifo weights": "not a regular file", "zero config": "not a regular file",
		"zero weights": "not a regular file", "huge weights": "exceeds the", "rank-sized weights": "exceeds the", "garbage weights": "adapter_model.safetensors"}
	var wg sync.WaitGroup
	for name, dir := range dirs {
		wg.Go(func() {
			code, body, took := post("/v1/load_lora_adapter", map[string]any{"lora_name": "bad", "lora_path": dir})
			var eb endpoints.ErrorBody
			json.Unmarshal(body, &eb)
			if code != 400 || paramOf(eb) != "lora_path" || !strings.Contains(eb.Error.Message, says[name]) || took > 5*time.Second {
				t.Errorf("%s: %d in %v: %s; want 400 for lora_path saying %q within 5 s", name, code, took, body, says[name])
			}
		})
	}
	wg.Go(func() {
		code, body, took := post("/v1/completions", map[string]any{"prompt": "ab", "max_tokens": 2})
		if code != 200 || took > 5*time.Second {
			t.Errorf("a completion beside the bad loads: %d in %v: %s", code, took, body)
		}
	})
	wg.Wait()
}

// TestAdapterNamesArePrintable: a name with control characters, invalid
// UTF-8 or of absurd length is refused before the adapter is read.
func TestAdapterNamesArePrintable(t *testing.T) {
	f := newFixture(t, Config{Slots: 2, MaxLen: 64})
	for _, name := range []string{"a\nb", "\x1b[31mred", "\xff", "tab\there", strings.Repeat("a", maxNameBytes+1)} {
		code, body := f.post(t, "/v1/load_lora_adapter", map[string]any{"lora_name": name, "lora_path": goodAdapter(t)})
		eb := decodeJSON[endpoints.ErrorBody](t, body)
		if code != 400 || paramOf(eb) != "lora_name" {
			t.Errorf("name %.20q: %d %s", name, code, body)
		}
		// Unload checks the name as load does: a 400 at the key, not a
		// 404 that echoes the control characters back.
		code, body = f.post(t, "/v1/unload_lora_adapter", map[string]any{"lora_name": name})
		if eb := decodeJSON[endpoints.ErrorBody](t, body); code != 400 || paramOf(eb) != "lora_name" {
			t.Errorf("unload %.20q: %d %s", name, code, body)
		}
	}
	if code, body := f.post(t, "/v1/load_lora_adapter", map[string]any{"lora_name": "réglé-1.0", "lora_path": goodAdapter(t)}); code != 200 {
		t.Errorf("a printable name: %d %s", code, body)
	}
}

// TestAdapterReadsTimeOut: a load that cannot get a reader within the
// server's adapter timeout gives up instead of waiting forever.
func TestAdapterReadsTimeOut(t *testing.T) {
	dir := t.TempDir()
	writeTestModel(t, dir)
	f := newFixtureStopped(t, dir, Config{Slots: 1, MaxLen: 64, AdapterTimeout: 200 * time.Millisecond})
	for range adapterReaders {
		f.srv.adapterReaders <- struct{}{} // every reader is stuck
	}
	start := time.Now()
	_, err := f.srv.readAdapterFiles(context.Background(), goodAdapter(t))
	if err == nil || !strings.Contains(err.Error(), "busy") || time.Since(start) > 2*time.Second {
		t.Errorf("after %v: %v", time.Since(start), err)
	}
}
