package workspace

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/model"
)

// pendingFamily reports whether a Lab config file is for a model family
// grpo cannot run yet (verifiers a60a606's nemotron files).
func pendingFamily(path string) bool {
	for _, p := range model.PendingFamilies() {
		if strings.HasPrefix(filepath.Base(path), strings.ToLower(strings.Split(p.Name, "-")[0])) {
			return true
		}
	}
	return false
}

// checkLabConfigs parses every config under ./configs through the loaders
// grpo train, eval and gepa use, env ids and args included, and expects
// nRL, nEval and nGEPA files. A file for a family grpo cannot run yet must
// still parse, then fail at validation (rl) or at loading its model
// (eval, gepa) with one line saying so, before any download.
func checkLabConfigs(t *testing.T, nRL, nEval, nGEPA int) {
	t.Helper()
	t.Setenv("HF_HUB_CACHE", t.TempDir()) // nothing cached, nothing fetched
	t.Setenv("HF_HUB_OFFLINE", "1")
	glob := func(dir string, n int) []string {
		files, _ := filepath.Glob(filepath.Join("configs", dir, "*.toml"))
		if len(files) != n {
			t.Errorf("%d %s configs, want %d", len(files), dir, n)
		}
		return files
	}
	for _, p := range glob("rl", nRL) {
		cfg, err := config.LoadWith(p, config.ParseOptions{Envs: env.Check})
		switch {
		case pendingFamily(p):
			wantPending(t, p, err, "model = ")
		case err != nil:
			t.Errorf("%v", err)
		case len(cfg.Warnings) > 0:
			// The gpt-oss file's reasoning_effort reaches its template: no warning.
			t.Errorf("%s: warnings %q", p, cfg.Warnings)
		}
	}
	for _, p := range glob("eval", nEval) {
		f, err := config.LoadEval(p)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		specs, err := f.Specs(config.EvalOverrides{})
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
		for _, s := range specs {
			if err := env.Check(s.ID, s.Args); err != nil {
				t.Errorf("%s: [[eval]] %s: %v", p, s.ID, err)
			}
			checkModel(t, p, s.Model, nil)
		}
		if len(f.Warnings) > 0 {
			t.Errorf("%s: warnings %q", p, f.Warnings)
		}
	}
	for _, p := range glob("gepa", nGEPA) {
		g, err := config.LoadGEPA(p)
		if err == nil {
			err = g.ValidateEnv(env.Check)
		}
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		var eps *endpoints.Registry
		if path := g.EndpointsFile(p); path != "" {
			if eps, err = endpoints.Load(path); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		}
		checkModel(t, p, g.Model, eps)
		checkModel(t, p, g.ReflectionModel, eps)
		// The gpt-oss file's reasoning_effort reaches the student's template: no warning.
		if len(g.Warnings) != 0 {
			t.Errorf("%s: warnings %q", p, g.Warnings)
		}
	}
}

// checkModel: a model of a pending family fails to load in one line; any
// other is not refused by name (an endpoint id of eps is not loaded).
func checkModel(t *testing.T, path, m string, eps *endpoints.Registry) {
	t.Helper()
	if eps != nil {
		if _, ok := eps.Lookup(m); ok {
			return
		}
	}
	if pendingFamily(path) {
		_, err := loader.Resolve(context.Background(), m, nil)
		wantPending(t, path, err, "model = ")
	} else if err := model.CheckHubID(m); err != nil {
		t.Errorf("%s: %v", path, err)
	}
}

func wantPending(t *testing.T, path string, err error, prefix string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), prefix) || !strings.Contains(err.Error(), "model family") ||
		!strings.Contains(err.Error(), "is not supported yet") || strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: want one line saying the model family is not supported yet, got %v", path, err)
	}
}
