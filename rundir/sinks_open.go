package rundir

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/grpo-dev/grpo/rundir/tfevents"
	"github.com/grpo-dev/grpo/rundir/wandb"

	"github.com/pelletier/go-toml/v2"
)

// SinkOptions configure OpenSinks. The caller fills in what the sinks
// need from the run's config; rundir does not read the config schema.
type SinkOptions struct {
	// RunName is the run's name from its config, "" for none; W&B names
	// its run after Wandb.Name, else RunName, else the directory.
	RunName string
	Wandb   Wandb
	// WandbConfig is the resolved run config, logged as W&B's run config
	// through its TOML tree; read only when W&B is on.
	WandbConfig any
	// Resumed runs continue after step Step.
	Resumed bool
	Step    int
	// Notify gets the lines the user must see: where W&B metrics went,
	// and an upload that failed mid-run.
	Notify func(string)
	// Env, HTTP and Now are for tests (os.Getenv, http.DefaultClient,
	// time.Now by default).
	Env  wandb.Env
	HTTP *http.Client
	Now  func() time.Time
}

// OpenSinks opens every sink of the run directory: metrics.jsonl and
// eval.jsonl, a new TensorBoard events file, and the W&B run when
// [wandb] is on.
func OpenSinks(d *Dir, o SinkOptions) (*Sinks, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Notify == nil {
		o.Notify = func(string) {}
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	s := &Sinks{sinks: []Sink{jsonlSink{d}}}
	tb, err := tfevents.Create(d.Path, o.Now(), host)
	if err != nil {
		return nil, err
	}
	if o.Resumed {
		if err := tb.Restart(o.Now(), o.Step+1); err != nil {
			tb.Close()
			return nil, err
		}
	}
	s.sinks = append(s.sinks, &tfeventsSink{w: tb, now: o.Now})
	d.Logf("tensorboard events in %s", tb.Path())

	if w := o.Wandb; w.On {
		cfgMap, err := configMap(o.WandbConfig)
		if err != nil {
			s.End(Failed)
			return nil, err
		}
		name := w.Name
		if name == "" {
			name = o.RunName
		}
		if name == "" {
			name = filepath.Base(d.Path)
		}
		run, line, err := wandb.Start(filepath.Join(d.Path, "wandb"), wandb.Options{
			Project: w.Project, Entity: w.Entity, Name: name, Group: w.Group, Tags: w.Tags, Offline: w.Offline,
			Config: cfgMap, Host: host, Resumed: o.Resumed, StartingStep: o.Step + 1,
			Env: o.Env, HTTP: o.HTTP, Now: o.Now,
			Warn: func(line string) { d.Logf("warning: %s", line); o.Notify("warning: " + line) }})
		if err != nil {
			s.End(Failed)
			return nil, err
		}
		d.Logf("%s", line)
		o.Notify(line)
		if run != nil {
			s.sinks = append(s.sinks, &wandbSink{run: run, plot: filepath.Join(d.Path, "rewards.png")})
		}
	}
	return s, nil
}

// configMap is the resolved config as W&B's run config: its TOML tree,
// so the dashboard shows the values the run used, defaults included.
func configMap(c any) (map[string]any, error) {
	b, err := toml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("W&B config: %w", err)
	}
	var m map[string]any
	if err := toml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("W&B config: %w", err)
	}
	return m, nil
}

// tfeventsSink writes each step's metrics, and each evaluation's under
// "eval/", as TensorBoard scalars.
type tfeventsSink struct {
	w   *tfevents.Writer
	now func() time.Time
}

func (t *tfeventsSink) Step(row map[string]any) error {
	step, m := scalars(row, "")
	return t.w.Scalars(t.now(), step, m)
}

func (t *tfeventsSink) Eval(row map[string]any) error {
	step, m := scalars(row, "eval/")
	return t.w.Scalars(t.now(), step, m)
}

func (t *tfeventsSink) End(string) error { return t.w.Close() }

// wandbSink logs steps and evaluations (under "eval/") to the W&B run and
// at the end its summary, the reward plot and the exit code.
type wandbSink struct {
	run  *wandb.Run
	plot string
}

func (w *wandbSink) Step(row map[string]any) error { return w.run.Log(scalars(row, "")) }
func (w *wandbSink) Eval(row map[string]any) error { return w.run.Log(scalars(row, "eval/")) }

// End maps the run's status to an exit code: W&B shows 0 as finished and
// anything else as failed; an interrupted run gets 130, a shell's code
// for Ctrl-C, so it reads as stopped rather than crashed in the logs.
func (w *wandbSink) End(status string) error {
	code := 1
	switch status {
	case Finished:
		code = 0
	case Interrupted:
		code = 130
	}
	return w.run.Finish(code, w.plot)
}
