package lora

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/inproc"
	"github.com/grpo-dev/grpo/model"
)

// TestShardsAreTheWholeAdapter: New on two expert-parallel ranks gives
// each rank its experts' adapters with the values New gives the whole
// model's (every matrix's init keyed by its name), and SaveShards writes
// the directory Save writes of the whole model's adapter: loaded back,
// the same parameters bit for bit. Two ranks holding the same experts,
// or a rank missing, are refused.
func TestShardsAreTheWholeAdapter(t *testing.T) {
	dir := filepath.Join(root, "testdata", "models", "qwen3-moe-tiny")
	cfg := Config{Rank: 4, Alpha: 8, TargetModules: []string{"q_proj", "gate_proj", "down_proj", "gate"}}
	whole := loadModel(t, "qwen3-moe-tiny")
	full, err := New(whole, cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := inproc.NewGroup(2, time.Minute)
	var shards []*Adapter
	for r := range 2 {
		be := cpu.New()
		coll, _ := g.Join(r, be)
		m, err := model.LoadExperts(dir, be, coll)
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(m, cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, a)
	}
	wantDir, gotDir := filepath.Join(t.TempDir(), "whole"), filepath.Join(t.TempDir(), "shards")
	if err := Save(wantDir, full, "tiny"); err != nil {
		t.Fatal(err)
	}
	if err := SaveShards(gotDir, shards, "tiny"); err != nil {
		t.Fatal(err)
	}
	want, got := loadValues(t, wantDir, whole), loadValues(t, gotDir, whole)
	if len(got) != len(want) {
		t.Fatalf("the shards save %d parameters, the whole adapter %d", len(got), len(want))
	}
	for name, v := range want {
		if !slices.Equal(got[name], v) {
			t.Errorf("%s: the shards' differs from the whole adapter's", name)
		}
	}
	for _, bad := range [][]*Adapter{{shards[0], shards[0]}, {shards[1]}} {
		if err := SaveShards(filepath.Join(t.TempDir(), "bad"), bad, "tiny"); err == nil || !strings.Contains(err.Error(), "expert") {
			t.Errorf("saving shards that do not hold every expert once: %v", err)
		}
	}
}

// loadValues loads the adapter in dir onto m and returns its values by
// name.
func loadValues(t *testing.T, dir string, m *model.Model) map[string][]float32 {
	t.Helper()
	a, err := Load(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	out := map[string][]float32{}
	for _, p := range a.Params() {
		out[p.Name] = downloadOn(m.Backend, p.Value)
	}
	return out
}

func downloadOn(be kernels.Backend, b kernels.Buffer) []float32 {
	v := make([]float32, b.Len())
	be.Download(v, b)
	return v
}
