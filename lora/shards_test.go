package lora

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
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
// the files Save writes of the whole model's adapter, byte for byte:
// per-expert tensors (Qwen3-MoE, with the routers) and experts PEFT
// stores fused (GLM-4.5, Qwen3.5-MoE, gpt-oss: every rank's fused
// together); loaded back onto the whole model, the same parameters bit
// for bit, and onto each rank, the rank's own parameters and no others.
// The values are drawn per name first (New's B matrices are zero). Two
// ranks holding the same experts, a rank missing, or the ranks out of
// order are refused.
func TestShardsAreTheWholeAdapter(t *testing.T) {
	for _, c := range []struct {
		model   string
		targets []string
	}{
		{"qwen3-moe-tiny", []string{"q_proj", "gate_proj", "down_proj", "gate"}},
		{"glm4_moe-tiny", []string{"q_proj", "gate_proj", "up_proj", "down_proj"}},
		{"qwen3_5-moe-tiny", []string{"q_proj", "up_proj", "down_proj"}},
		{"gpt_oss-tiny", []string{"q_proj", "gate_proj", "up_proj", "down_proj"}},
	} {
		t.Run(c.model, func(t *testing.T) { checkShardsSave(t, c.model, Config{Rank: 4, Alpha: 8, TargetModules: c.targets}) })
	}
}

func checkShardsSave(t *testing.T, name string, cfg Config) {
	dir := filepath.Join(root, "testdata", "models", name)
	whole := loadModel(t, name)
	full, err := New(whole, cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	drawValues(full)
	g, _ := inproc.NewGroup(2, time.Minute)
	var shards []*Adapter
	var ranks []*model.Model
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
		drawValues(a)
		shards, ranks = append(shards, a), append(ranks, m)
	}
	wantDir, gotDir := filepath.Join(t.TempDir(), "whole"), filepath.Join(t.TempDir(), "shards")
	if err := Save(wantDir, full, "tiny"); err != nil {
		t.Fatal(err)
	}
	if err := SaveShards(gotDir, shards, "tiny"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{WeightsFileName, ConfigFileName} {
		w, _ := os.ReadFile(filepath.Join(wantDir, f))
		g, err := os.ReadFile(filepath.Join(gotDir, f))
		if err != nil || len(w) == 0 || !bytes.Equal(g, w) {
			t.Errorf("%s: the shards' (%d bytes, %v) differs from the whole adapter's (%d bytes)", f, len(g), err, len(w))
		}
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
	for r, m := range ranks {
		got := loadValues(t, gotDir, m)
		own := shards[r].Params()
		if len(got) != len(own) {
			t.Errorf("rank %d: the saved adapter loads %d parameters onto it, it holds %d", r, len(got), len(own))
		}
		for _, p := range own {
			if !slices.Equal(got[p.Name], downloadOn(m.Backend, p.Value)) {
				t.Errorf("rank %d: %s loaded differs from the rank's", r, p.Name)
			}
		}
	}
	for _, bad := range [][]*Adapter{{shards[0], shards[0]}, {shards[1]}, {shards[1], shards[0]}} {
		if err := SaveShards(filepath.Join(t.TempDir(), "bad"), bad, "tiny"); err == nil || !strings.Contains(err.Error(), "expert") {
			t.Errorf("saving shards that do not hold every expert once, in order: %v", err)
		}
	}
}

// TestLoadOntoRanks: a PEFT adapter of the whole model loaded onto each
// of two expert-parallel ranks gives the rank the whole model's
// replicated parameters and its own experts', bit for bit as loading it
// whole gives them: per-expert tensors (Qwen3-MoE, PEFT's), and experts
// stored fused (gpt-oss, PEFT's; GLM-4.5 and Qwen3.5-MoE, Save's of
// drawn values), unfused and then sliced.
func TestLoadOntoRanks(t *testing.T) {
	for _, c := range []struct{ model, adapter string }{
		{"qwen3-moe-tiny", "theirs-moe"}, {"gpt_oss-tiny", "gpt_oss-tiny-experts"}, {"glm4_moe-tiny", ""}, {"qwen3_5-moe-tiny", ""},
	} {
		t.Run(c.model, func(t *testing.T) {
			whole := loadModel(t, c.model)
			adapter := filepath.Join(root, "testdata", "lora", c.adapter)
			if c.adapter == "" {
				a, err := New(whole, Config{Rank: 4, Alpha: 8, TargetModules: []string{"q_proj", "gate_proj", "up_proj", "down_proj"}}, 5)
				if err != nil {
					t.Fatal(err)
				}
				drawValues(a)
				adapter = filepath.Join(t.TempDir(), "adapter")
				if err := Save(adapter, a, "tiny"); err != nil {
					t.Fatal(err)
				}
			}
			want := loadValues(t, adapter, whole)
			ne := whole.Config.NumExperts
			g, _ := inproc.NewGroup(2, time.Minute)
			for r := range 2 {
				be := cpu.New()
				coll, _ := g.Join(r, be)
				m, err := model.LoadExperts(filepath.Join(root, "testdata", "models", c.model), be, coll)
				if err != nil {
					t.Fatal(err)
				}
				got := loadValues(t, adapter, m)
				experts := 0
				for name, v := range got {
					if strings.Contains(name, ".experts.") {
						experts++
						if !heldBy(name, r*ne/2, ne/2) {
							t.Errorf("rank %d holds %s, another rank's expert", r, name)
						}
					}
					if !slices.Equal(v, want[name]) {
						t.Errorf("rank %d: %s differs from the whole model's (or is not there)", r, name)
					}
				}
				wantExperts := 0
				for name := range want {
					if strings.Contains(name, ".experts.") && heldBy(name, r*ne/2, ne/2) {
						wantExperts++
					} else if _, ok := got[name]; !ok && !strings.Contains(name, ".experts.") {
						t.Errorf("rank %d lacks %s", r, name)
					}
				}
				if experts == 0 || experts != wantExperts {
					t.Errorf("rank %d holds %d expert parameters, want its %d", r, experts, wantExperts)
				}
			}
		})
	}
}

// heldBy reports whether the expert parameter name is of an expert in
// [first, first+n).
func heldBy(name string, first, n int) bool {
	for e := first; e < first+n; e++ {
		if strings.Contains(name, fmt.Sprintf(".experts.%d.", e)) {
			return true
		}
	}
	return false
}

// drawValues gives every parameter of a values drawn from a stream
// keyed by its name, so the ranks' and the whole adapter's agree.
func drawValues(a *Adapter) {
	for _, p := range a.Params() {
		rng := rand.New(rand.NewPCG(streamOf(p.Name), 1))
		v := make([]float32, p.Value.Len())
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		a.be.Upload(p.Value, v)
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
