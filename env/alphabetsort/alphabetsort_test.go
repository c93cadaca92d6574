package alphabetsort

import (
	"context"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
	"github.com/grpo-dev/grpo/rubric"
)

func TestAlphabetSortEpisodeByHand(t *testing.T) {
	e := envtest.NewEnv(t, "alphabet-sort", map[string]any{"dataset_name": "synthetic", "min_turns": 3, "max_turns": 3, "num_train_examples": 4}, env.WithVersion("v0"))
	exs, err := e.Examples("train")
	if err != nil || len(exs) != 4 {
		t.Fatalf("%d examples, %v", len(exs), err)
	}
	again, _ := envtest.NewEnv(t, "alphabet-sort", map[string]any{"dataset_name": "synthetic", "min_turns": 3, "max_turns": 3, "num_train_examples": 4}, env.WithVersion("v0")).Examples("train")
	if !reflect.DeepEqual(exs, again) {
		t.Fatal("same seed, different examples")
	}
	ex := exs[0]
	info := decodeSortInfo(ex.Info)
	if info.NumTurns != 3 || len(info.FollowUps) != 2 || len(info.GroundTruths) != 3 {
		t.Fatalf("info %+v", info)
	}
	// The ground truth of each turn is the cumulative names sorted by the
	// chosen key, checked here with an independent sort.
	var cum []string
	for turn, names := range info.TurnNames {
		cum = append(cum, names...)
		want := append([]string(nil), cum...)
		keyOf := func(n string) string {
			f, l := splitName(n)
			if info.SortByFirst {
				return f
			}
			return l
		}
		sort.SliceStable(want, func(i, j int) bool { return keyOf(want[i]) < keyOf(want[j]) })
		got := make([]string, len(info.GroundTruths[turn]))
		for i, g := range info.GroundTruths[turn] {
			got[i] = strings.TrimSuffix(g, " // new name!")
			if turn > 0 && strings.HasSuffix(g, " // new name!") != contains(names, got[i]) {
				t.Errorf("turn %d: %q marked wrongly", turn, g)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("turn %d: ground truth %v, want %v", turn, got, want)
		}
	}
	if !strings.Contains(ex.Prompt[0].Content, "<alphabetical_sorted>") || !strings.Contains(ex.Prompt[0].Content, "Sort these names in alphabetical order by") {
		t.Errorf("prompt %q", ex.Prompt[0].Content)
	}
	// Drive the episode: perfect answers each turn.
	ep := e.NewEpisode(ex)
	var turns []string
	for turn := 0; turn < 3; turn++ {
		tag := "combined_alphabetical_sorted"
		if turn == 0 {
			tag = "alphabetical_sorted"
		}
		answer := "<" + tag + ">\n" + strings.Join(info.GroundTruths[turn], "\n") + "\n</" + tag + ">"
		turns = append(turns, answer)
		reply, done, err := ep.Respond(context.Background(), answer)
		if err != nil {
			t.Fatal(err)
		}
		if turn < 2 {
			if done || len(reply) != 1 || reply[0].Content != info.FollowUps[turn] {
				t.Fatalf("turn %d: reply %v done %v", turn, reply, done)
			}
		} else if !done {
			t.Fatal("episode did not end after num_turns")
		}
	}
	if r := envtest.ScoreTurns(e, ex, turns...); r.Reward != 1 {
		t.Errorf("perfect episode scored %v", r.Reward)
	}
	// Second turn with two names swapped: similarity s < 1, reward
	// (1 + s^4 + 1)/3 with power per turn.
	gt := append([]string(nil), info.GroundTruths[1]...)
	gt[0], gt[len(gt)-1] = gt[len(gt)-1], gt[0]
	bad := "<combined_alphabetical_sorted>\n" + strings.Join(gt, "\n") + "\n</combined_alphabetical_sorted>"
	s := rubric.Ratio(strings.ToLower(strings.Join(gt, "\n")), strings.ToLower(strings.Join(info.GroundTruths[1], "\n")))
	want := (2 + math.Pow(s, 4)) / 3
	if r := envtest.ScoreTurns(e, ex, turns[0], bad, turns[2]); !envtest.Near(r.Reward, want) || s >= 1 {
		t.Errorf("swapped turn scored %v, want %v (s=%v)", r.Reward, want, s)
	}
	// power_per_turn = false: the average is raised to the power.
	flat := envtest.NewEnv(t, "alphabet-sort", map[string]any{"dataset_name": "synthetic", "min_turns": 3, "max_turns": 3, "power_per_turn": false})
	if r := envtest.ScoreTurns(flat, ex, turns[0], bad, turns[2]); !envtest.Near(r.Reward, math.Pow((2+s)/3, 4)) {
		t.Errorf("power on average scored %v", r.Reward)
	}
	// A second block in one turn that is not better zeroes that turn.
	twice := turns[0] + "\n" + turns[0]
	if r := envtest.ScoreTurns(e, ex, twice, turns[1], turns[2]); !envtest.Near(r.Reward, 2.0/3) {
		t.Errorf("repeated block scored %v, want 2/3", r.Reward)
	}
	if r := envtest.ScoreTurns(e, ex, "no tags"); r.Reward != 0 {
		t.Errorf("no answer scored %v", r.Reward)
	}
}

func TestAlphabetSortArgs(t *testing.T) {
	for _, args := range []map[string]any{
		{"min_turns": 0},
		{"min_turns": 4, "max_turns": 3},
		{"min_names_per_turn": 6},
	} {
		if _, err := env.New("alphabet-sort", args); err == nil {
			t.Errorf("args %v accepted", args)
		}
	}
}

// TestAlphabetSortV1: the default lays Info out as the Lab's v1 taskset
// (user_turns, the opening prompt first; ground_truths; num_turns), plays
// the user turns after the first as the replies, and scores under
// alphabet_sort.
func TestAlphabetSortV1(t *testing.T) {
	e := envtest.NewEnv(t, "alphabet-sort", map[string]any{"dataset_name": "synthetic", "min_turns": 2, "max_turns": 2, "num_train_examples": 1})
	exs, err := e.Examples("train")
	if err != nil || len(exs) != 1 {
		t.Fatalf("%d examples, %v", len(exs), err)
	}
	ex := exs[0]
	turns, _ := ex.Info["user_turns"].([]string)
	if len(ex.Info) != 3 || len(turns) != 2 || turns[0] != ex.Prompt[0].Content {
		t.Fatalf("info %+v", ex.Info)
	}
	info := decodeSortInfo(ex.Info)
	var answers []string
	ep := e.NewEpisode(ex)
	for turn, tag := range []string{"alphabetical_sorted", "combined_alphabetical_sorted"} {
		answers = append(answers, "<"+tag+">\n"+strings.Join(info.GroundTruths[turn], "\n")+"\n</"+tag+">")
		reply, done, _ := ep.Respond(context.Background(), answers[turn])
		if turn == 0 && (done || len(reply) != 1 || reply[0].Content != turns[1]) || turn == 1 && !done {
			t.Fatalf("turn %d: reply %v, done %v", turn, reply, done)
		}
	}
	if r := envtest.ScoreTurns(e, ex, answers...); r.Reward != 1 || r.Metrics["alphabet_sort"] != 1 {
		t.Errorf("perfect episode scored %+v", r)
	}
}
