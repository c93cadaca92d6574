package lab

import (
	"fmt"
	"strings"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rubric"
)

// SyntheticData is the dataset_name that selects a builtin's generated
// data; every other value names a hub dataset.
const SyntheticData = "synthetic"

// SyntheticDefaultCount is how many examples a synthetic split has when
// num_train_examples is -1 ("all rows", which a generator does not have).
const SyntheticDefaultCount = 1000

// CheckDatasetName refuses an empty dataset_name, which once meant
// synthetic data: the choice is now spelled out, so nothing is substituted
// silently.
func CheckDatasetName(a env.Args) error {
	if strings.TrimSpace(a.String("dataset_name")) == "" {
		return fmt.Errorf(`dataset_name is empty; name a hub dataset, or "synthetic" for generated data`)
	}
	return nil
}

// MustRubric builds a builtin's rubric; an error is a bug in the builtin.
func MustRubric(terms ...rubric.Term) *rubric.Rubric {
	rb, err := rubric.Weighted(terms...)
	if err != nil {
		panic(err)
	}
	return rb
}
