package model

import (
	"fmt"
	"strings"
)

// pendingFamily is a model family that Lab's configs name and grpo
// cannot run yet (none today: Nemotron-3, the last, runs since
// nemotron_h's reader). It is known by its config.json model_type and by the prefixes
// of its hub ids, so a config naming one fails before a download of tens
// of gigabytes, not after.
type pendingFamily struct {
	name, modelType, example string
	idPrefixes               []string
	toolCalls                string // as Arch.ToolCalls
}

var pendingFamilies []pendingFamily

func (f pendingFamily) err() error {
	return fmt.Errorf("the %s model family (model_type %s) is not supported yet; supported model types: %s", f.name, f.modelType, supportedTypes())
}

// Pending is a model family grpo knows of but cannot run yet.
type Pending struct {
	Name, ModelType string
	Example         string // a hub id of the family, as Lab's configs name it
	ToolCalls       string // as Arch.ToolCalls
}

// PendingFamilies lists them, for `grpo models`.
func PendingFamilies() []Pending {
	out := make([]Pending, len(pendingFamilies))
	for i, f := range pendingFamilies {
		out[i] = Pending{f.name, f.modelType, f.example, f.toolCalls}
	}
	return out
}

// CheckHubID returns an error, one line, when id is the hub id of a model
// whose family grpo does not support yet; nil for any other id. Callers
// pass hub ids only: a local directory is judged by its config.json.
func CheckHubID(id string) error {
	for _, f := range pendingFamilies {
		for _, p := range f.idPrefixes {
			if len(id) >= len(p) && strings.EqualFold(id[:len(p)], p) {
				return f.err()
			}
		}
	}
	return nil
}

// pendingModelType is CheckHubID for a config.json's model_type.
func pendingModelType(t string) error {
	for _, f := range pendingFamilies {
		if f.modelType == t {
			return f.err()
		}
	}
	return nil
}
