package lab

import (
	"context"
	"errors"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/model/hub"
)

// HubRows is env.LoadHubRows for a builtin's default (Lab) dataset. When
// the dataset is neither cached nor downloadable (offline, or the hub out
// of reach) the error is one line that names the dataset and the env arg
// that selects data which needs no hub (fallback, e.g.
// `dataset_name = "synthetic"`), so nothing is ever substituted silently.
func HubRows(ctx context.Context, o env.Options, envID, repo, config, split, fallback string) ([]env.Row, error) {
	rows, err := env.LoadHubRows(ctx, o.Hub, repo, config, split)
	if err == nil || !(errors.Is(err, hub.ErrNotCached) || errors.Is(err, hub.ErrTransfer)) {
		return rows, err
	}
	detail := err.Error()
	var he *hub.Error
	if errors.As(err, &he) {
		detail = he.Detail
	}
	return nil, &env.DatasetUnavailableError{Env: envID, Dataset: repo, Split: split, Fallback: fallback, Detail: detail, Err: err}
}
