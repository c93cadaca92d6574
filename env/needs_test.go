package env

import (
	"strings"
	"testing"
)

// TestHubNeeds: the Hub environments of Lab's configs that need containers
// fail at load, in New and in Check, with one line naming what is missing,
// whichever way the id is written; other unknown ids are still "not found".
func TestHubNeeds(t *testing.T) {
	for id, missing := range map[string]string{
		"primeintellect/dspy-flights":    "a container sandbox",
		"prime/opencode-harbor@0.2.1":    "a container runtime (Docker) and the OpenCode CLI",
		"PrimeIntellect/OpenCode_Harbor": "a container runtime (Docker)",
		"dspy-flights":                   "a container sandbox",
	} {
		_, err := New(id, nil)
		want := "env " + id + " cannot run on this machine: it needs " + missing
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("New(%s): %v", id, err)
		}
		if err := Check(id, nil); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Check(%s): %v", id, err)
		}
	}
	for _, id := range []string{"someone/dspy-flights", "primeintellect/no-such-env"} {
		if _, err := New(id, nil); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("New(%s): %v", id, err)
		}
	}
}
