package gepa

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// brokenTeacher fails every reflection, as an endpoint that cannot be
// reached does.
type brokenTeacher struct{}

func (brokenTeacher) Reflect(context.Context, string, uint64) (string, error) {
	return "", errors.New("teacher: dial tcp 127.0.0.1:9: connection refused")
}

// TestFailedRunSaysFailed (issue 27): a run that ends with an error
// leaves metadata.json saying "failed: …" with the error, not "running".
func TestFailedRunSaysFailed(t *testing.T) {
	dir := t.TempDir()
	_, err := Run(context.Background(), levelStudent(), brokenTeacher{}, levelOptions(dir))
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(meta.Status, "failed: ") || !strings.Contains(meta.Status, "connection refused") {
		t.Fatalf("status %q, want failed: with the error", meta.Status)
	}
}
