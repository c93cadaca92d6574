// Package wandb logs a training run to Weights & Biases without the W&B
// SDK: the run's records go to a local run directory in the SDK's own
// layout and .wandb record-log format (which `wandb sync` uploads), and,
// when an API key and the server are at hand, to the server over W&B's
// public HTTP API as well. Which of the two happened is always said in one
// line; docs/logging.md says what was checked against W&B's sources.
package wandb

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Options describe the run and where it goes.
type Options struct {
	Project, Entity, Name, Group string
	Tags                         []string
	// Offline is [wandb] offline: keep the run local only.
	Offline bool
	// Config is the run's config, logged as W&B's run config.
	Config map[string]any
	Host   string
	// Resumed runs continue the W&B run of the same run directory after
	// step StartingStep-1.
	Resumed      bool
	StartingStep int
	// Env reads WANDB_MODE, WANDB_API_KEY, WANDB_BASE_URL, NETRC and HOME;
	// nil is os.Getenv.
	Env Env
	// HTTP and Timeout (per request) default to http.DefaultClient and 20 s.
	HTTP    *http.Client
	Timeout time.Duration
	// Now defaults to time.Now.
	Now func() time.Time
	// Warn gets a line when uploading fails mid-run and the run goes on
	// locally only.
	Warn func(string)
}

// Run is one W&B run.
type Run struct {
	o       Options
	id      string
	local   *localRun
	online  *client // nil when offline, or once an upload has failed
	start   time.Time
	summary map[string]any
	// pending is the history row of the latest step, held until a later
	// step arrives or the run ends so that the evaluation after a step
	// joins that step's row, as the SDK merges wandb.log calls of one step.
	pending     map[string]any
	pendingStep int
	finished    bool
}

// Start opens the run directory under root (<run dir>/wandb) and, unless
// offline, creates the run on the server. line says where the metrics go:
// the run's URL, or the local path and why nothing is uploaded. With
// WANDB_MODE=disabled it returns a nil Run and says so.
func Start(root string, o Options) (r *Run, line string, err error) {
	if o.Env == nil {
		o.Env = os.Getenv
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTP == nil {
		o.HTTP = http.DefaultClient
	}
	if o.Timeout == 0 {
		o.Timeout = 20 * time.Second
	}
	if o.Env.disabled() {
		return nil, "W&B: off (WANDB_MODE=disabled); metrics are in metrics.jsonl and the tfevents file only", nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, "", fmt.Errorf("W&B run directory: %w", err)
	}
	id, err := loadRunID(root, o.Resumed)
	if err != nil {
		return nil, "", err
	}
	r = &Run{o: o, id: id, start: o.Now(), summary: map[string]any{}}
	info := RunInfo{ID: id, Entity: o.Entity, Project: o.Project, Group: o.Group, DisplayName: o.Name,
		Host: o.Host, Tags: o.Tags, Config: o.Config, Start: r.start, StartingStep: o.StartingStep, Resumed: o.Resumed}

	base := o.Env.baseURL()
	why := ""
	switch key := o.Env.apiKey(base); {
	case o.Offline:
		why = "[wandb] offline = true"
	case o.Env.offlineByEnv() != "":
		why = o.Env.offlineByEnv()
	case key == "":
		why = "no API key (set WANDB_API_KEY or run wandb login)"
	default:
		c := &client{base: base, key: key, http: o.HTTP, timeout: o.Timeout}
		if err := c.start(info); err != nil {
			var refused *errRefused
			if errors.As(err, &refused) {
				why = fmt.Sprintf("%s refused the run (%v)", base, err)
			} else {
				why = fmt.Sprintf("%s is unreachable (%v)", base, err)
			}
		} else {
			r.online = c
		}
	}
	if r.local, err = createLocal(root, r.online == nil, r.start, id); err != nil {
		return nil, "", fmt.Errorf("W&B run directory: %w", err)
	}
	if err := r.local.add(func(n int64) []byte { return headerRecord(n, "grpo") }); err != nil {
		return nil, "", err
	}
	if err := r.local.add(func(n int64) []byte { return runRecord(n, info) }); err != nil {
		return nil, "", err
	}
	if r.online != nil {
		return r, fmt.Sprintf("W&B: logging to %s (local copy %s)", r.online.runURL(), r.local.dir), nil
	}
	return r, fmt.Sprintf("W&B: offline run at %s because %s; upload it with: wandb sync %s", r.local.dir, why, r.local.dir), nil
}

// Dir is the local run directory (offline-run-… or run-…).
func (r *Run) Dir() string { return r.local.dir }

// ID is the W&B run id.
func (r *Run) ID() string { return r.id }

// loadRunID makes an 8-character id as the SDK does (lowercase letters and
// digits) and keeps it in wandb-resume.json, the SDK's file for the id a
// resumed run continues; a resumed run reads it back.
func loadRunID(root string, resumed bool) (string, error) {
	path := filepath.Join(root, "wandb-resume.json")
	if resumed {
		if b, err := os.ReadFile(path); err == nil {
			var v struct {
				RunID string `json:"run_id"`
			}
			if json.Unmarshal(b, &v) == nil && v.RunID != "" {
				return v.RunID, nil
			}
		}
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 8)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	v, _ := json.Marshal(map[string]string{"run_id": string(b)})
	if err := os.WriteFile(path, v, 0o644); err != nil {
		return "", fmt.Errorf("W&B run id: %w", err)
	}
	return string(b), nil
}

// Log adds metrics to step's history row.
func (r *Run) Log(step int, metrics map[string]float64) error {
	if r.pending != nil && step != r.pendingStep {
		if err := r.flush(); err != nil {
			return err
		}
	}
	if r.pending == nil {
		r.pending, r.pendingStep = map[string]any{}, step
	}
	for k, v := range metrics {
		r.pending[k] = v
	}
	return nil
}

// flush writes the pending row with W&B's _step, _runtime and _timestamp,
// to the record log and, when online, to file_stream.
func (r *Run) flush() error {
	row, step := r.pending, r.pendingStep
	r.pending = nil
	now := r.o.Now()
	row["_step"] = step
	row["_runtime"] = now.Sub(r.start).Seconds()
	row["_timestamp"] = float64(now.UnixNano()) / 1e9
	for k, v := range row {
		r.summary[k] = v
	}
	if err := r.local.add(func(n int64) []byte { return historyRecord(n, step, row) }); err != nil {
		return err
	}
	if r.online != nil {
		if err := r.online.stream(row, r.summary); err != nil {
			r.goOffline(err)
		}
	}
	return nil
}

// goOffline stops uploading after a failure; the record log has
// everything, so `wandb sync` can finish the job.
func (r *Run) goOffline(err error) {
	r.online = nil
	if r.o.Warn != nil {
		r.o.Warn(fmt.Sprintf("W&B: upload failed (%v); the run goes on locally at %s; upload it with: wandb sync %s", err, r.local.dir, r.local.dir))
	}
}

// Finish logs the last row, the summary (with the reward plot when
// plotPNG names one) and the exit code, and closes the run. exitCode 0 is
// a finished run; W&B shows any other as failed.
func (r *Run) Finish(exitCode int, plotPNG string) error {
	if r.finished {
		return nil
	}
	r.finished = true
	defer r.local.close()
	if r.pending != nil {
		if err := r.flush(); err != nil {
			return err
		}
	}
	if plotPNG != "" {
		if err := r.addPlot(plotPNG); err != nil {
			return err
		}
	}
	if err := r.local.add(func(n int64) []byte { return summaryRecord(n, r.summary) }); err != nil {
		return err
	}
	if err := r.local.saveSummary(r.summary); err != nil {
		return err
	}
	runtime := r.o.Now().Sub(r.start)
	if err := r.local.add(func(n int64) []byte { return exitRecord(n, exitCode, runtime) }); err != nil {
		return err
	}
	if err := r.local.add(finalRecord); err != nil {
		return err
	}
	if r.online != nil {
		err := r.online.stream(nil, r.summary) // the summary with the plot
		if err == nil {
			err = r.online.finish(exitCode)
		}
		if err != nil {
			r.goOffline(err)
		}
	}
	return nil
}

// addPlot saves the PNG as W&B media (media/images/<key>_<step>_<hash>.png,
// as wandb.Image names it) and puts its reference in the summary under
// "rewards", so the run page shows it.
func (r *Run) addPlot(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // a run that stopped before any step has no plot
		}
		return err
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("reward plot %s: %w", path, err)
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	step, _ := r.summary["_step"].(int)
	rel := fmt.Sprintf("media/images/rewards_%d_%s.png", step, hash[:20])
	if err := r.local.saveFile(rel, data); err != nil {
		return err
	}
	if err := r.local.add(func(n int64) []byte { return filesRecord(n, rel, true) }); err != nil {
		return err
	}
	r.summary["rewards"] = map[string]any{"_type": "image-file", "path": rel, "sha256": hash, "size": len(data),
		"format": "png", "width": cfg.Width, "height": cfg.Height}
	if r.online != nil {
		if err := r.online.upload(rel, data); err != nil {
			r.goOffline(err)
		}
	}
	return nil
}
