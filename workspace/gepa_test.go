package workspace

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/env"
	_ "github.com/grpo-dev/grpo/env/builtins"
	"github.com/pelletier/go-toml/v2"
)

// gepaLayout is verifiers 8d4b33247's GEPA config (configs/gepa/*.toml):
// the keys each table may hold. grpo has no GEPA schema yet, so the
// workspace's files are held to this layout.
var gepaLayout = map[string][]string{
	"":          {"model", "reflection_model", "endpoints_path", "env", "gepa", "execution"},
	"env":       {"env_id", "env_args", "extra_env_kwargs"},
	"gepa":      {"max_calls", "num_train", "num_val", "minibatch_size", "perfect_score", "state_columns"},
	"execution": {"max_concurrent", "seed", "sampling_args"},
}

// checkGEPAConfigs: each GEPA config is TOML in that layout, with the
// budget set, an environment grpo knows and models that are
// endpoint ids of ../endpoints.toml or provider/model names.
func checkGEPAConfigs(t *testing.T) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("configs", "gepa", "*.toml"))
	if len(files) != 2 {
		t.Errorf("%d gepa configs", len(files))
	}
	for _, p := range files {
		data, _ := os.ReadFile(p)
		var raw map[string]any
		if err := toml.Unmarshal(data, &raw); err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		checkKeys(t, p, "", raw)
		for table := range gepaLayout {
			if sub, ok := raw[table].(map[string]any); ok && table != "" {
				checkKeys(t, p, table, sub)
			}
		}
		var g struct {
			Model           string `toml:"model"`
			ReflectionModel string `toml:"reflection_model"`
			EndpointsPath   string `toml:"endpoints_path"`
			Env             struct {
				EnvID   string         `toml:"env_id"`
				EnvArgs map[string]any `toml:"env_args"`
			} `toml:"env"`
			GEPA struct {
				MaxCalls int `toml:"max_calls"`
				NumTrain int `toml:"num_train"`
			} `toml:"gepa"`
		}
		if err := toml.Unmarshal(data, &g); err != nil || g.GEPA.MaxCalls == 0 || g.GEPA.NumTrain == 0 {
			t.Errorf("%s: %v %+v", p, err, g)
		}
		err := env.Check(g.Env.EnvID, g.Env.EnvArgs)
		if _, ok := env.Lookup(g.Env.EnvID); !ok || err != nil {
			t.Errorf("%s: env_id %q: %v", p, g.Env.EnvID, err)
		}
		eps, err := endpoints.Load(filepath.Join(filepath.Dir(p), g.EndpointsPath))
		if err != nil {
			t.Errorf("%s: endpoints_path %q: %v", p, g.EndpointsPath, err)
			continue
		}
		for _, m := range []string{g.Model, g.ReflectionModel} {
			if _, ok := eps.Lookup(m); !ok && !strings.Contains(m, "/") {
				t.Errorf("%s: model %q is neither an endpoint id of %s nor provider/model", p, m, g.EndpointsPath)
			}
		}
	}
}

func checkKeys(t *testing.T, path, table string, m map[string]any) {
	t.Helper()
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		found := false
		for _, want := range gepaLayout[table] {
			found = found || k == want
		}
		if !found {
			t.Errorf("%s: [%s] %s is not a key of verifiers' GEPA config", path, table, k)
		}
	}
}
