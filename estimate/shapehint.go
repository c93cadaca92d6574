package estimate

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/hub"
)

// WithShapeHint adds to a failure to read the model's config.json from
// the hub (offline, or the hub out of reach) the way to estimate without
// it: --shape, naming the shape of the model's own name when there is one.
func WithShapeHint(err error, modelID, shape string) error {
	if shape != "" || !errors.Is(err, hub.ErrNotCached) && !errors.Is(err, hub.ErrTransfer) {
		return err
	}
	name := "NAME"
	if _, ok := model.Shape(strings.ToLower(path.Base(modelID))); ok {
		name = strings.ToLower(path.Base(modelID))
	}
	return fmt.Errorf("%w; without the hub, estimate a known shape: grpo estimate CONFIG --shape %s (shapes: %s)", err, name, strings.Join(model.ShapeNames(), ", "))
}
