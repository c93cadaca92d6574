// Package alphabetsort is the alphabet-sort builtin: sort names over
// several turns, scored by sequence similarity, as Prime Intellect's
// alphabet_sort. It registers itself with package env on init.
package alphabetsort

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/lab"
	"github.com/grpo-dev/grpo/rubric"
)

// alphabet-sort has two versions that score alike. v1 (the default)
// follows verifiers a60a606's alphabet_sort taskset: the reward is named
// alphabet_sort; Info holds user_turns (the opening prompt, then the
// follow-ups), ground_truths and num_turns; and the examples are its
// infinite task stream (stream.go): the dataset's rows cycled forever
// with random.Random(seed) drawing every layout as Python does, so the
// tasks are the Lab's, in its order, fresh layouts on each pass; training
// takes the first num_train_examples (-1: one pass over the rows), eval
// the first num_eval_examples, as the Lab's eval takes its first -n. v0
// follows Prime Intellect's alphabet_sort environment at verifiers
// 8d4b33247: weighted_reward, Info with follow_ups, turn_names and
// sort_by_first, one example per row with grpo's own generator drawing
// the layouts (not the names, nor the scoring) and the last
// num_eval_examples held out. Both: the same prompts, turn structure,
// "// new name!" marking, argument names and defaults, and reward
// (difflib ratio of the lower-cased sorted lists, raised to
// similarity_power per turn or on the average, a turn with several answer
// blocks scoring only if each improved on the last), and data: the
// "names" lists of the hub dataset kalomaze/alphabetic-arxiv-authors-it1
// (dataset_name, dataset_split), a row's names the first ones a turn
// layout needs, a row with too few skipped. dataset_name = "synthetic"
// draws names from builtin first and last name lists instead (grpo's
// generator, eval from a separate stream, in both versions), which needs
// no network.

func init() {
	env.MustRegister(env.Spec{
		ID:          "alphabet-sort",
		Description: "multi-turn: sort names by first or last name, then merge the new names given each turn; reward = alphabet_sort: difflib ratio^power, as verifiers a60a606's taskset (v0: weighted_reward, the same score)",
		Versions:    lab.Versions("0.1.12"),
		Data:        "hub dataset " + alphabetSortDataset + ` (dataset_name, dataset_split), as Lab; dataset_name = "synthetic" for names from builtin lists`,
		Args: []env.ArgSpec{
			{Name: "max_turns", Type: env.ArgInt, Default: 3, Help: "most turns per episode"},
			{Name: "min_turns", Type: env.ArgInt, Default: 1, Help: "fewest turns per episode"},
			{Name: "min_names_per_turn", Type: env.ArgInt, Default: 1, Help: "fewest new names per turn"},
			{Name: "max_names_per_turn", Type: env.ArgInt, Default: 5, Help: "most new names per turn"},
			{Name: "similarity_power", Type: env.ArgInt, Default: 4, Help: "exponent applied to the similarity"},
			{Name: "power_per_turn", Type: env.ArgBool, Default: true, Help: "raise each turn's similarity to the power before averaging (else the average)"},
			{Name: "dataset_name", Type: env.ArgString, Default: alphabetSortDataset, Help: `hub dataset with a "names" list column, as Lab's; "synthetic" = names drawn from builtin lists (no network)`},
			{Name: "dataset_split", Type: env.ArgString, Default: "train", Help: "split of dataset_name"},
			{Name: "seed", Type: env.ArgInt, Default: 1337420, Help: "seed of the dataset (v1: of Python's random.Random, as the Lab's SEED)"},
			{Name: "num_train_examples", Type: env.ArgInt, Default: -1, Help: "training examples: the first of the task stream (-1 = one pass over the rows; v0: every example but the eval ones; synthetic: 1000)"},
			{Name: "num_eval_examples", Type: env.ArgInt, Default: 100, Help: "eval examples: the first of the task stream (v0: the last ones built from the split; synthetic: a separate stream)"},
		},
		New: newAlphabetSort,
	})
}

type alphabetSort struct {
	args env.Args
	opts env.Options
	rb   *rubric.Rubric
	v0   bool
}

const alphabetSortDataset = "kalomaze/alphabetic-arxiv-authors-it1"

func newAlphabetSort(a env.Args, o env.Options) (env.Environment, error) {
	synthetic := a.String("dataset_name") == lab.SyntheticData
	if err := lab.CheckDatasetName(a); err != nil {
		return nil, err
	}
	switch {
	case a.Int("min_turns") < 1:
		return nil, errors.New("min_turns must be at least 1")
	case a.Int("min_turns") > a.Int("max_turns"):
		return nil, fmt.Errorf("min_turns (%d) must be at most max_turns (%d)", a.Int("min_turns"), a.Int("max_turns"))
	case a.Int("min_names_per_turn") < 1:
		return nil, errors.New("min_names_per_turn must be at least 1")
	case a.Int("min_names_per_turn") > a.Int("max_names_per_turn"):
		return nil, fmt.Errorf("min_names_per_turn (%d) must be at most max_names_per_turn (%d)", a.Int("min_names_per_turn"), a.Int("max_names_per_turn"))
	case synthetic && a.Int("max_turns")*a.Int("max_names_per_turn") > len(firstNames)*len(lastNames)/4:
		return nil, fmt.Errorf("max_turns × max_names_per_turn = %d names is more than the builtin name lists can give distinct", a.Int("max_turns")*a.Int("max_names_per_turn"))
	}
	e := &alphabetSort{args: a, opts: o, v0: lab.IsV0(o)}
	name := "alphabet_sort"
	if e.v0 {
		name = "weighted_reward"
	}
	e.rb = lab.MustRubric(rubric.Term{Name: name, Weight: 1, Func: rubric.Reward(e.reward)})
	return e, nil
}

func (e *alphabetSort) ID() string             { return "alphabet-sort" }
func (e *alphabetSort) Rubric() *rubric.Rubric { return e.rb }

// sortInfo is what an example carries in Info: everything the harness and
// the rubric need, as in Prime's dataset: v1 has user_turns, v0
// follow_ups, turn_names and sort_by_first.
type sortInfo struct {
	UserTurns    []string   `json:"user_turns,omitempty"`
	FollowUps    []string   `json:"follow_ups"`
	TurnNames    [][]string `json:"turn_names"`
	GroundTruths [][]string `json:"ground_truths"`
	NumTurns     int        `json:"num_turns"`
	SortByFirst  bool       `json:"sort_by_first"`
}

func (e *alphabetSort) Examples(split string) ([]env.Example, error) {
	if split != "train" && split != "eval" {
		return nil, env.SplitErr(e.ID(), split)
	}
	if name := e.args.String("dataset_name"); name != lab.SyntheticData {
		return e.hubExamples(name, split)
	}
	n, stream := e.args.Int("num_train_examples"), uint64(0)
	if n < 0 {
		n = lab.SyntheticDefaultCount
	}
	if split == "eval" {
		n, stream = e.args.Int("num_eval_examples"), 1
	}
	r := lab.NewRNG(e.args.Int("seed"), stream)
	out := make([]env.Example, 0, max(n, 0))
	for i := 0; i < n; i++ {
		prompt, info, _ := e.generate(r, func(need int) ([]string, bool) { return syntheticNames(r, need) })
		out = append(out, e.example(split, i, prompt, info))
	}
	return out, nil
}

// hubExamples builds one example per row of the hub split, as Prime's
// build_dataset does: a row's names with spaces removed and repeats
// dropped, the first ones a turn layout needs; a row with too few names
// is skipped. The last num_eval_examples examples are the eval split.
func (e *alphabetSort) hubExamples(name, split string) ([]env.Example, error) {
	rows, err := lab.HubRows(context.Background(), e.opts, e.ID(), name, "", e.args.String("dataset_split"), `dataset_name = "synthetic"`)
	if err != nil {
		return nil, err
	}
	if !e.v0 {
		return e.stream(rows, split)
	}
	r := lab.NewRNG(e.args.Int("seed"), 0)
	type built struct {
		prompt string
		info   sortInfo
	}
	var all []built
	for _, row := range rows {
		names, err := rowNames(row)
		if err != nil {
			return nil, err
		}
		prompt, info, ok := e.generate(r, func(need int) ([]string, bool) {
			if len(names) < need {
				return nil, false
			}
			return names[:need], true
		})
		if ok {
			all = append(all, built{prompt, info})
		}
	}
	cut := max(0, len(all)-max(e.args.Int("num_eval_examples"), 0))
	part := all[cut:]
	if split == "train" {
		part = all[:cut]
		if n := e.args.Int("num_train_examples"); n >= 0 && n < len(part) {
			part = part[:n]
		}
	}
	out := make([]env.Example, len(part))
	for i, b := range part {
		out[i] = e.example(split, i, b.prompt, b.info)
	}
	return out, nil
}

// rowNames reads a row's "names" list, joining each name's words
// ("Vladimir Drinfeld" → "VladimirDrinfeld") and dropping repeats.
func rowNames(r env.Row) ([]string, error) {
	v, ok := r.Fields["names"]
	if !ok {
		return nil, fmt.Errorf("%s: no field \"names\" (the row has %s); alphabet-sort reads a list of names per row, as %s has", r.Where, env.FieldNames(r.Fields), alphabetSortDataset)
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: field \"names\" is a %s, not a list of names", r.Where, env.JSONKind(v))
	}
	seen := map[string]bool{}
	var out []string
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s: field \"names\" holds a %s, not a name", r.Where, env.JSONKind(x))
		}
		if c := strings.ReplaceAll(s, " ", ""); !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// syntheticNames draws need distinct names from the builtin lists.
func syntheticNames(r *lab.RNG, need int) ([]string, bool) {
	seen := map[string]bool{}
	var names []string
	for len(names) < need {
		n := lab.Pick(r, firstNames) + lab.Pick(r, lastNames)
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names, true
}

// example is one episode as the version's Info lays it out.
func (e *alphabetSort) example(split string, i int, prompt string, info sortInfo) env.Example {
	ex := env.Example{ID: split + "-" + strconv.Itoa(i), Prompt: []chat.Message{{Role: "user", Content: prompt}}}
	if e.v0 {
		answer, _ := json.Marshal(map[string]any{"ground_truths": info.GroundTruths, "turn_names": info.TurnNames})
		ex.Answer = string(answer)
		ex.Info = map[string]any{"follow_ups": info.FollowUps, "turn_names": info.TurnNames,
			"ground_truths": info.GroundTruths, "num_turns": info.NumTurns, "sort_by_first": info.SortByFirst}
		return ex
	}
	answer, _ := json.Marshal(map[string]any{"ground_truths": info.GroundTruths})
	ex.Answer = string(answer)
	ex.Info = map[string]any{"user_turns": append([]string{prompt}, info.FollowUps...),
		"ground_truths": info.GroundTruths, "num_turns": info.NumTurns}
	return ex
}

// splitName cuts "VladimirDrinfeld" at its second capital, as Prime's
// extract_first_name / extract_last_name do; Python's isupper is
// Unicode-aware, so "JoséÁlvarez" cuts at "Á".
func splitName(combined string) (first, last string) {
	for i, c := range combined {
		if i > 0 && unicode.IsUpper(c) {
			return combined[:i], combined[i:]
		}
	}
	return combined, ""
}

// generate builds one example the way Prime's build_dataset (v0) and
// load (v1) do, drawing in their order, with names(need) giving the
// names; ok is false when it has too few (after the turn layout's draws,
// as the Lab skips such a row).
func (e *alphabetSort) generate(r lab.Rand, names func(need int) ([]string, bool)) (prompt string, info sortInfo, ok bool) {
	a := e.args
	minN, maxN := a.Int("min_names_per_turn"), a.Int("max_names_per_turn")
	numTurns := r.Between(a.Int("min_turns"), a.Int("max_turns"))
	perTurn := make([]int, numTurns)
	need := 0
	for i := range perTurn {
		perTurn[i] = r.Between(minN, maxN)
		need += perTurn[i]
	}
	picked, ok := names(need)
	if !ok {
		return "", sortInfo{}, false
	}
	sortByFirst := r.Intn(2) == 0
	sortType := "LAST"
	if sortByFirst {
		sortType = "FIRST"
	}
	info = sortInfo{NumTurns: numTurns, SortByFirst: sortByFirst}
	idx := 0
	for _, c := range perTurn {
		info.TurnNames = append(info.TurnNames, picked[idx:idx+c])
		idx += c
	}
	var cumulative []string
	for t := 0; t < numTurns; t++ {
		cumulative = append(cumulative, info.TurnNames[t]...)
		sorted := append([]string(nil), cumulative...)
		sort.SliceStable(sorted, func(i, j int) bool {
			fi, li := splitName(sorted[i])
			fj, lj := splitName(sorted[j])
			if sortByFirst {
				return fi < fj
			}
			return li < lj
		})
		if t > 0 {
			for i, n := range sorted {
				if contains(info.TurnNames[t], n) {
					sorted[i] = n + " // new name!"
				}
			}
		}
		info.GroundTruths = append(info.GroundTruths, sorted)
	}
	shuffled := func(xs []string) []string {
		s := append([]string(nil), xs...)
		r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		return s
	}
	templateLines := func(n, newAfter int) string {
		lines := make([]string, n)
		for i := range lines {
			lines[i] = "Name" + strconv.Itoa(i+1)
			if newAfter >= 0 && i+1 > newAfter {
				lines[i] += " // new name!"
			}
		}
		return strings.Join(lines, "\n")
	}
	prompt = fmt.Sprintf("Sort these names in alphabetical order by %s name: %s\n\nUse exactly this format:\n<alphabetical_sorted>\n%s\n</alphabetical_sorted>",
		sortType, strings.Join(shuffled(info.TurnNames[0]), ", "), templateLines(r.Between(minN, maxN), -1))
	for t := 1; t < numTurns; t++ {
		turnNames := strings.Join(shuffled(info.TurnNames[t]), ", ")
		cum := 0
		for i := 0; i <= t; i++ {
			cum += len(info.TurnNames[i])
		}
		count := r.Between(minN, cum)
		threshold := r.Between(0, count-1)
		base := fmt.Sprintf("Now sort ALL of these names alphabetically by %s name: %s\n\nThese are in addition to the prior list. Mark any NEW names (that weren't in the prior list) with `// new name!` at the end.", sortType, turnNames)
		if t == 1 {
			base += "\n\nUse exactly this format:\n<combined_alphabetical_sorted>\n" + templateLines(count, threshold) + "\n</combined_alphabetical_sorted>"
		} else {
			base += " Follow the same format as before."
		}
		info.FollowUps = append(info.FollowUps, base)
	}
	return prompt, info, true
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// sortEpisode replays Prime's SortingEnv: after assistant turn k it sends
// follow-up k until num_turns answers were given.
type sortEpisode struct {
	followUps []string
	numTurns  int
	turns     int
}

func (e *alphabetSort) NewEpisode(ex env.Example) env.Episode {
	info := decodeSortInfo(ex.Info)
	followUps := info.FollowUps
	if len(info.UserTurns) > 0 {
		followUps = info.UserTurns[1:] // v1: the first opened the episode
	}
	return &sortEpisode{followUps: followUps, numTurns: info.NumTurns}
}

func (s *sortEpisode) Respond(_ context.Context, _ string) ([]chat.Message, bool, error) {
	s.turns++
	if s.turns >= s.numTurns {
		return nil, true, nil
	}
	msg := "Continue"
	if s.turns-1 < len(s.followUps) {
		msg = s.followUps[s.turns-1]
	}
	return []chat.Message{{Role: "user", Content: msg}}, false, nil
}

// decodeSortInfo reads Info whether it holds the Go values Examples put
// there or their JSON round trip (an external rubric, a saved dataset).
func decodeSortInfo(m map[string]any) sortInfo {
	var info sortInfo
	b, err := json.Marshal(m)
	if err == nil {
		json.Unmarshal(b, &info)
	}
	return info
}

// reward is Prime's weighted_reward (v0), alphabet_sort (v1).
func (e *alphabetSort) reward(r rubric.Rollout) float64 {
	info := decodeSortInfo(r.Info)
	if info.NumTurns <= 0 {
		return 0
	}
	power := float64(e.args.Int("similarity_power"))
	perTurn := e.args.Bool("power_per_turn")
	turns := r.AssistantTurns()
	total := 0.0
	for t := 1; t <= info.NumTurns; t++ {
		total += evalSortTurn(turns, t, info.GroundTruths, perTurn, power)
	}
	avg := total / float64(info.NumTurns)
	if perTurn {
		return avg
	}
	return math.Pow(avg, power)
}

// evalSortTurn is Prime's eval_turn for 1-based turn t.
func evalSortTurn(turns []string, t int, truths [][]string, applyPower bool, power float64) float64 {
	if t > len(truths) || t > len(turns) {
		return 0
	}
	tag := "alphabetical_sorted"
	if t > 1 {
		tag = "combined_alphabetical_sorted"
	}
	blocks := rubric.XMLTags(turns[t-1], tag)
	if len(blocks) == 0 {
		return 0
	}
	var scores []float64
	for _, b := range blocks {
		var predicted []string
		for _, line := range strings.Split(b, "\n") {
			if l := rubric.PyStrip(line); l != "" {
				predicted = append(predicted, l)
			}
		}
		scores = append(scores, sortSimilarity(predicted, truths[t-1], applyPower, power))
	}
	// Several attempts count only if each improved on the one before.
	for i := 1; i < len(scores); i++ {
		if scores[i] <= scores[i-1] {
			return 0
		}
	}
	return scores[len(scores)-1]
}

func sortSimilarity(predicted, expected []string, applyPower bool, power float64) float64 {
	if len(predicted) == 0 || len(expected) == 0 {
		return 0
	}
	clean := func(xs []string) string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = strings.ToLower(rubric.PyStrip(x))
		}
		return strings.Join(out, "\n")
	}
	s := rubric.Ratio(clean(predicted), clean(expected))
	if applyPower {
		return math.Pow(s, power)
	}
	return s
}

// The multi-turn builtins say how many model turns an episode can take
// (TurnLimiter), so rollout sizes each KV cache slot for the whole
// conversation rather than for one turn: without it a 3-turn alphabet-sort
// filled its slot in turn 1 and trained on that turn alone.

// MaxTurns is max_turns: an episode plays its num_turns ≤ max_turns turns.
func (e *alphabetSort) MaxTurns() int { return e.args.Int("max_turns") }
