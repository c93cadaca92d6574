package builtins_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/model/hub"
	"github.com/parquet-go/parquet-go"
)

// useFakeHub is the option that points dataset downloads at endpoint
// with an empty cache.
func useFakeHub(t *testing.T, endpoint string, offline bool) env.Option {
	t.Helper()
	return env.WithHub(hub.Options{Endpoint: endpoint, CacheDir: t.TempDir(), Token: "-", Offline: offline})
}

// reverseRunes reverses by code point, as reverse-text's answers are made.
func reverseRunes(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// sortInfo is the part of alphabet-sort's Info this test reads.
type sortInfo struct {
	TurnNames [][]string `json:"turn_names"`
	NumTurns  int        `json:"num_turns"`
}

func decodeSortInfo(m map[string]any) sortInfo {
	var info sortInfo
	if b, err := json.Marshal(m); err == nil {
		json.Unmarshal(b, &info)
	}
	return info
}

func parquetBytes[T any](t *testing.T, rows []T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := parquet.Write(&b, rows); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestLabDatasetsByDefault: with no args, reverse-text, alphabet-sort and
// math read the Lab's hub datasets (served here in their column layouts:
// Reverse-Text-RL's "prompt", the arXiv authors' "names" list,
// competition_math's problem/solution as JSON lines) through the hub
// client, and build their examples from those rows.
func TestLabDatasetsByDefault(t *testing.T) {
	type promptRow struct {
		Prompt string `parquet:"prompt"`
	}
	texts := []string{"The community in Bruck was merged into it", "Hello world.", "A third line", "Fourth", "Fifth one"}
	var prompts []promptRow
	for _, s := range texts {
		prompts = append(prompts, promptRow{s})
	}
	type namesRow struct {
		Names []string `parquet:"names,list"`
	}
	authors := []namesRow{
		{[]string{"Vladimir Drinfeld", "Maxim Kontsevich", "Vladimir Drinfeld", "Ana Lopez", "Jose Alvarez", "Emmy Noether", "Sophie Germain", "Kurt Godel", "Alan Turing", "Ada Lovelace", "Paul Erdos", "Terence Tao", "Emil Artin", "Hermann Weyl", "Felix Klein", "John Nash"}},
		{[]string{"Only One"}}, // too few names for any turn layout: skipped, as Lab's build_dataset skips it
	}
	for i := 0; i < 3; i++ {
		authors = append(authors, authors[0])
	}
	math := `{"problem": "What is $1+1$?", "level": "Level 1", "type": "Algebra", "solution": "We add: $1+1=\\boxed{2}$."}
{"problem": "Simplify $\\frac{2}{4}$.", "level": "Level 1", "type": "Algebra", "solution": "It is \\boxed{\\frac{1}{2}}."}
`
	repos := map[string]map[string][]byte{
		"PrimeIntellect/Reverse-Text-RL":        {"data/train-00000-of-00001.parquet": parquetBytes(t, prompts), "README.md": []byte("#")},
		"kalomaze/alphabetic-arxiv-authors-it1": {"data/train-00000-of-00001.parquet": parquetBytes(t, authors)},
		"chiayewken/competition_math":           {"data/train.jsonl": []byte(math), "data/test.jsonl": []byte(math)},
	}
	for repo, files := range repos {
		srv, _ := fakeDatasetHub(t, repo, files)
		hubOpt := useFakeHub(t, srv.URL, false)

		switch repo {
		case "PrimeIntellect/Reverse-Text-RL":
			// v1 trains and evaluates on the split from its first row.
			v1 := envtest.NewEnv(t, "reverse-text", map[string]any{"num_eval_examples": 2}, hubOpt)
			if train, err := v1.Examples("train"); err != nil || len(train) != 5 {
				t.Fatalf("reverse-text v1 train: %d, %v", len(train), err)
			}
			if ev, _ := v1.Examples("eval"); len(ev) != 2 || ev[1].Prompt[1].Content != "Hello world." {
				t.Fatalf("reverse-text v1 eval: %+v", ev)
			}
			e := envtest.NewEnv(t, "reverse-text", map[string]any{"num_eval_examples": 2}, hubOpt, env.WithVersion("v0"))
			train, err := e.Examples("train")
			if err != nil || len(train) != 3 {
				t.Fatalf("reverse-text train: %d, %v", len(train), err)
			}
			ev, _ := e.Examples("eval")
			if len(ev) != 2 || ev[1].Prompt[1].Content != "Fifth one" {
				t.Fatalf("reverse-text eval: %+v", ev)
			}
			if ex := train[0]; ex.Prompt[0].Content != "Reverse the text character-by-character. Put your answer in <reversed_text> tags." || ex.Prompt[1].Content != texts[0] || ex.Answer != reverseRunes(texts[0]) {
				t.Errorf("reverse-text example %+v", ex)
			}
		case "kalomaze/alphabetic-arxiv-authors-it1":
			e := envtest.NewEnv(t, "alphabet-sort", map[string]any{"min_turns": 2, "max_turns": 2, "max_names_per_turn": 3, "num_eval_examples": 1}, hubOpt, env.WithVersion("v0"))
			train, err := e.Examples("train")
			if err != nil || len(train) != 3 {
				t.Fatalf("alphabet-sort train: %d, %v (want 4 rows with names, 1 held out)", len(train), err)
			}
			info := decodeSortInfo(train[0].Info)
			var got []string
			for _, turn := range info.TurnNames {
				got = append(got, turn...)
			}
			// Lab's order: the row's names, spaces removed, repeats dropped.
			want := []string{"VladimirDrinfeld", "MaximKontsevich", "AnaLopez", "JoseAlvarez", "EmmyNoether", "SophieGermain"}[:len(got)]
			if strings.Join(got, ",") != strings.Join(want, ",") || info.NumTurns != 2 {
				t.Errorf("turn names %v, want %v (info %+v)", got, want, info)
			}
			if !strings.Contains(train[0].Prompt[0].Content, "Sort these names in alphabetical order by") {
				t.Errorf("prompt %q", train[0].Prompt[0].Content)
			}
		case "chiayewken/competition_math":
			e := envtest.NewEnv(t, "math", nil, hubOpt)
			train, err := e.Examples("train")
			if err != nil || len(train) != 2 {
				t.Fatalf("math train: %d, %v", len(train), err)
			}
			if train[0].Answer != "2" || train[1].Answer != `\frac{1}{2}` || train[0].Prompt[1].Content != "What is $1+1$?" {
				t.Errorf("math examples %+v", train)
			}
		}
	}
}

// TestLabDatasetOffline: offline with an empty cache, each builtin says in
// one line which dataset it lacks and which arg selects data that needs no
// hub, and that arg works; nothing is substituted silently.
func TestLabDatasetOffline(t *testing.T) {
	hubOpt := useFakeHub(t, "http://127.0.0.1:1", true)
	for _, c := range []struct {
		id, dataset, fallback string
		args                  map[string]any
	}{
		{"reverse-text", "PrimeIntellect/Reverse-Text-RL", `dataset_name = "synthetic"`, map[string]any{"num_train_examples": 3}},
		{"alphabet-sort", "kalomaze/alphabetic-arxiv-authors-it1", `dataset_name = "synthetic"`, map[string]any{"num_train_examples": 3}},
		{"math", "chiayewken/competition_math", `dataset_name = "synthetic"`, map[string]any{"num_train_examples": 3}},
		{"gsm8k", "openai/gsm8k", `dataset_path = "DIR"`, map[string]any{"num_train_examples": 3}},
	} {
		_, err := envtest.NewEnv(t, c.id, c.args, hubOpt).Examples("train")
		var du *env.DatasetUnavailableError
		if !errors.As(err, &du) || !errors.Is(err, hub.ErrNotCached) {
			t.Fatalf("%s offline: %v", c.id, err)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, c.dataset) || !strings.Contains(msg, "set args "+c.fallback) || !strings.Contains(msg, "HF_HUB_OFFLINE") {
			t.Errorf("%s offline: %q", c.id, msg)
		}
		if c.id == "gsm8k" {
			c.args["dataset_path"] = envtest.GSM8KDir
		} else {
			c.args["dataset_name"] = lab.SyntheticData
		}
		if exs, err := envtest.NewEnv(t, c.id, c.args, hubOpt).Examples("train"); err != nil || len(exs) != 3 {
			t.Errorf("%s with %s: %d examples, %v", c.id, c.fallback, len(exs), err)
		}
	}
	if _, err := env.New("reverse-text", map[string]any{"dataset_name": ""}, hubOpt); err == nil || !strings.Contains(err.Error(), `"synthetic"`) {
		t.Errorf("empty dataset_name: %v", err)
	}
}

// TestWordleLabArgs: wordle takes Lab's path_to_system_prompt (the file's
// text as the system message) and MultiTurnEnv's max_turns (the game stops
// after that many turns, the last guess getting no reply).
func TestWordleLabArgs(t *testing.T) {
	p := t.TempDir() + "/prompt.txt"
	if err := os.WriteFile(p, []byte("Guess well.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"path_to_system_prompt": p, "max_turns": 2, "num_train_examples": 1, "words": []any{"crane"}}
	// v1 leaves the cap to the rollout (MaxTurns) and plays the capped
	// turn's move; v0's episode ends on it unplayed.
	if n := envtest.NewEnv(t, "wordle", args).(env.TurnLimiter).MaxTurns(); n != 2 {
		t.Errorf("v1 MaxTurns with max_turns 2: %d", n)
	}
	e := envtest.NewEnv(t, "wordle", args, env.WithVersion("v0"))
	exs, err := e.Examples("train")
	if err != nil || exs[0].Prompt[0].Content != "Guess well.\n" {
		t.Fatalf("prompt %+v, %v", exs, err)
	}
	ep := e.NewEpisode(exs[0])
	reply, done, _ := ep.Respond(context.Background(), "<guess>[plant]</guess>")
	if done || len(reply) != 1 {
		t.Fatalf("turn 1: done %v, reply %+v", done, reply)
	}
	if reply, done, _ = ep.Respond(context.Background(), "<guess>[robot]</guess>"); !done || reply != nil {
		t.Errorf("turn 2 of max_turns 2: done %v, reply %+v", done, reply)
	}
	if _, err := env.New("wordle", map[string]any{"path_to_system_prompt": p + ".missing"}); err == nil || !strings.Contains(err.Error(), "path_to_system_prompt") {
		t.Errorf("missing prompt file: %v", err)
	}
}
