package builtins_test

import (
	"context"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/rubric"
)

func TestArgsValidation(t *testing.T) {
	for _, c := range []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"sed": 1}, []string{`env alphabet-sort: unknown arg "sed"; did you mean "seed"?`, "valid args: max_turns (int, default 3)", "power_per_turn (bool, default true)", "seed (int, default 1337420)"}},
		{map[string]any{"colour": 1}, []string{`unknown arg "colour"; valid args:`}},
		{map[string]any{"max_turns": "3"}, []string{`arg "max_turns" must be int, got string "3"`}},
		{map[string]any{"max_turns": 2.5}, []string{`arg "max_turns" must be int, got float 2.5`}},
		{map[string]any{"power_per_turn": 1}, []string{`arg "power_per_turn" must be bool, got int 1`}},
	} {
		_, err := env.New("alphabet-sort", c.args)
		if err == nil {
			t.Errorf("%v accepted", c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q lacks %q", c.args, err, w)
			}
		}
		if strings.Contains(err.Error(), "did you mean") && c.args["colour"] != nil {
			t.Errorf("did-you-mean for a far miss: %v", err)
		}
	}
}

type constEnv struct{ id string }

func (c constEnv) ID() string                             { return c.id }
func (c constEnv) Examples(string) ([]env.Example, error) { return []env.Example{{ID: "0"}}, nil }
func (c constEnv) NewEpisode(env.Example) env.Episode     { return env.SingleTurnEpisode{} }
func (c constEnv) Rubric() *rubric.Rubric {
	return lab.MustRubric(rubric.Term{Name: "one", Weight: 1, Func: rubric.Reward(func(rubric.Rollout) float64 { return 1 })})
}

func TestRegisterAndLookup(t *testing.T) {
	spec := env.Spec{ID: "test-org/const", Aliases: []string{"const-alias"}, Description: "test",
		Args: []env.ArgSpec{{Name: "k", Type: env.ArgString, Default: "v"}},
		New: func(a env.Args, _ env.Options) (env.Environment, error) {
			return constEnv{"test-org/const:" + a.String("k")}, nil
		}}
	if err := env.Register(spec); err != nil {
		t.Fatal(err)
	}
	if err := env.Register(env.Spec{ID: "const-alias", New: spec.New}); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("duplicate: %v", err)
	}
	if err := env.Register(env.Spec{ID: "bad id!", New: spec.New}); err == nil {
		t.Error("bad id accepted")
	}
	e, err := env.New("const_alias", map[string]any{"k": "w"})
	if err != nil || e.ID() != "test-org/const:w" {
		t.Fatalf("New via alias: %v %v", e, err)
	}
	for _, id := range []string{"reverse-text", "primeintellect/reverse-text", "PrimeIntellect/reverse_text", "alphabet-sort", "gsm8k", "wordle", "math"} {
		if s, ok := env.Lookup(id); !ok || s.New == nil {
			t.Errorf("Lookup(%q) failed", id)
		}
	}
	if _, err := env.New("no-such-env", nil); err == nil || !strings.Contains(err.Error(), "known environments: ") || !strings.Contains(err.Error(), "reverse-text") {
		t.Errorf("unknown env: %v", err)
	}
	ids := map[string]bool{}
	for _, s := range env.List() {
		ids[s.ID] = true
	}
	for _, id := range []string{"reverse-text", "alphabet-sort", "gsm8k", "wordle", "math", "test-org/const"} {
		if !ids[id] {
			t.Errorf("List lacks %s", id)
		}
	}
	r := e.Rubric().Score(context.Background(), rubric.SingleTurn("q", "a", ""))
	if r.Reward != 1 {
		t.Errorf("registered env rubric: %v", r)
	}
}
