package model

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/kernels/inproc"
)

// shardWhole loads every expert and keeps the rank's (ShardExperts).
func shardWhole(dir string, be kernels.Backend, coll kernels.Collective) (*Model, error) {
	m, err := Load(dir, be)
	if err != nil {
		return nil, err
	}
	return m, m.ShardExperts(coll)
}

// TestExpertParallelMXFP4: gpt-oss's MXFP4 checkpoint (gpt_oss-tiny-mxfp4)
// on two expert-parallel ranks, each loading its experts' blocks, scales
// and biases alone (LoadExperts) or loading them all and keeping its
// share (ShardExperts), reproduces one device: log-probs and gradients
// within 1e-5 relative (checkExpertParallel). On cpu the experts are
// dequantized to bf16 at load; on emu they stay MXFP4 (the grouped GEMM
// decodes them), the ranks' holding a half of the whole's codes and
// scales.
func TestExpertParallelMXFP4(t *testing.T) {
	backends := []struct {
		name string
		open func() kernels.Backend
	}{{"cpu", func() kernels.Backend { return cpu.New() }}, {"emu", func() kernels.Backend {
		b := emu.New()
		t.Cleanup(func() { b.Close() })
		return b
	}}}
	for _, b := range backends {
		for _, load := range []struct {
			name string
			f    func(string, kernels.Backend, kernels.Collective) (*Model, error)
		}{{"LoadExperts", LoadExperts}, {"ShardExperts", shardWhole}} {
			t.Run(fmt.Sprintf("%s/%s", b.name, load.name), func(t *testing.T) {
				if b.name == "emu" && testing.Short() {
					t.Skip("trains under the emulator")
				}
				if b.name == "emu" {
					checkHeldMXFP4(t, b.open, load.f)
				}
				checkRanksLoaded(t, "gpt_oss-tiny-mxfp4", b.open, false, 1e-5, load.f)
			})
		}
	}
}

// checkHeldMXFP4 checks that each of two ranks loaded by loadRank keeps
// its experts MXFP4, a half of the whole model's codes and scales, and no
// dequantized copy.
func checkHeldMXFP4(t *testing.T, open func() kernels.Backend, loadRank func(string, kernels.Backend, kernels.Collective) (*Model, error)) {
	t.Helper()
	dir := filepath.Join("..", "testdata", "models", "gpt_oss-tiny-mxfp4")
	whole, err := Load(dir, open())
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Free()
	g, _ := inproc.NewGroup(2, time.Minute)
	for r := range 2 {
		be := open()
		coll, _ := g.Join(r, be)
		m, err := loadRank(dir, be, coll)
		if err != nil {
			t.Fatal(err)
		}
		for l := range m.Config.NumLayers {
			got, want := m.W.Layers[l].MoE, whole.W.Layers[l].MoE
			if got.GateUp != nil || got.Down != nil || got.GateUpMX == nil || got.DownMX == nil {
				t.Fatalf("rank %d layer %d: the experts are not kept MXFP4 alone", r, l)
			}
			for i, pair := range [][2]kernels.Buffer{{got.GateUpMX.Codes, want.GateUpMX.Codes}, {got.GateUpMX.Scales, want.GateUpMX.Scales},
				{got.DownMX.Codes, want.DownMX.Codes}, {got.DownMX.Scales, want.DownMX.Scales}, {got.GateUpBias, want.GateUpBias}, {got.DownBias, want.DownBias}} {
				if 2*pair[0].Len() != pair[1].Len() {
					t.Errorf("rank %d layer %d part %d: %d bytes or values, the whole model's %d", r, l, i, pair[0].Len(), pair[1].Len())
				}
			}
		}
		m.Free()
	}
}
