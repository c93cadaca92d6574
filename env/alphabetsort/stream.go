package alphabetsort

import (
	"fmt"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/lab"
)

// stream is v1's task stream (verifiers a60a606's
// AlphabetSortTaskset.load, an INFINITE taskset): the rows cycled
// forever, one random.Random(seed) drawing every row's layout in the
// Lab's order and carrying on across passes, so each pass lays the rows
// out afresh. Train is its first num_train_examples tasks (-1: one pass),
// eval its first num_eval_examples, as the Lab's eval takes the first -n.
func (e *alphabetSort) stream(rows []env.Row, split string) ([]env.Example, error) {
	lists := make([][]string, len(rows))
	for i, row := range rows {
		names, err := rowNames(row)
		if err != nil {
			return nil, err
		}
		lists[i] = names
	}
	n := e.args.Int("num_train_examples")
	if split == "eval" {
		n = max(e.args.Int("num_eval_examples"), 0)
	}
	seed := e.args.Int("seed")
	if seed < 0 {
		seed = -seed // random.Random(seed) seeds with abs(seed)
	}
	r := lab.NewPyRandom(uint64(seed))
	var out []env.Example
	for n != 0 {
		start := len(out)
		for _, names := range lists {
			if len(out) == n {
				return out, nil
			}
			prompt, info, ok := e.generate(r, func(need int) ([]string, bool) {
				return names[:min(need, len(names))], len(names) >= need
			})
			if ok {
				out = append(out, e.example(split, len(out), prompt, info))
			}
		}
		switch {
		case len(out) == start:
			return nil, fmt.Errorf("a whole pass over %s gave no task: no row had the names its drawn turn layout needed (up to max_turns × max_names_per_turn = %d); lower min_turns/max_turns or min_names_per_turn/max_names_per_turn",
				e.args.String("dataset_name"), e.args.Int("max_turns")*e.args.Int("max_names_per_turn"))
		case n < 0:
			return out, nil
		}
	}
	return nil, nil
}
