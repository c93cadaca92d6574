package lora

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/model"
)

var update = flag.Bool("update", false, "rewrite testdata/lora/ours (then rerun testdata/reference/peft_check.py)")

// TestOursAdapterFiles pins the adapter peft_check.py reads: Save of the
// fixed adapter must reproduce the committed files byte for byte, so the
// Python logits stay those of what Save writes today. -update rewrites
// them.
func TestOursAdapterFiles(t *testing.T) {
	m := loadModel(t, "qwen3-tiny")
	checkOursFiles(t, newOursAdapter(t, m), "ours", "qwen3-tiny")
	// Qwen3-MoE: every expert's projections and the routers.
	mm := loadModel(t, "qwen3-moe-tiny-dense")
	checkOursFiles(t, moeAdapter(t, mm, append([]string{"gate"}, AllModules...)), "ours-moe", "qwen3-moe-tiny-dense")
}

// checkOursFiles saves a as testdata/lora/<name> with -update, else
// compares what Save writes with the committed files.
func checkOursFiles(t *testing.T, a *Adapter, name, modelName string) {
	committed := filepath.Join(root, "testdata", "lora", name)
	if *update {
		if err := Save(committed, a, "testdata/models/"+modelName); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := Save(dir, a, "testdata/models/"+modelName); err != nil {
		t.Fatal(err)
	}
	for _, fname := range []string{ConfigFileName, WeightsFileName} {
		got, err := os.ReadFile(filepath.Join(dir, fname))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(committed, fname))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from testdata/lora/%s/%s; if the change is intended run go test ./lora -run TestOursAdapterFiles -update and /usr/bin/python3 testdata/reference/peft_check.py", fname, name, fname)
		}
	}
}

// TestOursGolden: the adapter grpo wrote, read and applied by the
// independent PEFT-convention reader in peft_check.py (float64), gives the
// logits grpo computes with the adapter it loads back.
func TestOursGolden(t *testing.T) {
	checkReaderLogits(t, "ours", "qwen3-tiny")
}

// TestMoEAdaptersGolden: on Qwen3-MoE, the adapter grpo wrote (every
// expert and the routers, testdata/lora/ours-moe) and one peft_check.py
// wrote in PEFT's layout (F16; q_proj, the experts' gate_proj and
// down_proj, the routers; rank_pattern on down_proj, alpha_pattern on the
// routers: testdata/lora/theirs-moe) give the independent reader's
// logits.
func TestMoEAdaptersGolden(t *testing.T) {
	checkReaderLogits(t, "ours-moe", "qwen3-moe-tiny-dense")
	a := checkReaderLogits(t, "theirs-moe", "qwen3-moe-tiny")
	if r, alpha, ok := a.ExpertModule(1, model.ProjDown); !ok || r != 2 || alpha != 8 {
		t.Errorf("experts' down_proj: rank %d alpha %g (%v), want rank_pattern's 2 and alpha 8", r, alpha, ok)
	}
	if l := a.RouterLoRA(0); l == nil || l.Scale != 3.0/4 {
		t.Errorf("router adapter %+v: want alpha_pattern's 3 / r 4", l)
	}
	if a.ExpertLoRA(0, model.ProjUp) != nil {
		t.Error("up_proj adapted, not in target_modules")
	}
}

// checkReaderLogits loads testdata/lora/<name> onto the tiny model and
// compares the logits with those peft_check.py computed in float64 (≤ 1e-4),
// refusing a golden adapter too weak to reveal a wrong one.
func checkReaderLogits(t *testing.T, name, modelName string) *Adapter {
	t.Helper()
	g := readGolden(t, name)
	m := loadModel(t, modelName)
	a, err := Load(filepath.Join(root, "testdata", "lora", name), m)
	if err != nil {
		t.Fatal(err)
	}
	got := logits(t, m.WithAdapter(a), g.Tokens)
	if d := maxAbsDiff(got, g.logits); d > 1e-4 {
		t.Fatalf("max |Δlogit| vs peft_check.py = %g, want ≤ 1e-4", d)
	} else {
		t.Logf("max |Δlogit| vs the float64 reference: %.2g (the adapter moves the logits by up to %.2g)", d, g.BaseDelta)
	}
	if g.BaseDelta < 0.05 {
		t.Fatalf("the golden adapter changes the logits by only %g; the check would not see a wrong adapter", g.BaseDelta)
	}
	return a
}

// TestTheirsGolden: an adapter written by peft_check.py in PEFT's layout
// (BF16, rsLoRA, q/v/down only, a rank_pattern and an alpha_pattern) loads
// into grpo and gives the reader's logits.
func TestTheirsGolden(t *testing.T) {
	a := checkReaderLogits(t, "theirs", "qwen2-tiny")
	// The patterns took effect: down_proj has rank 2, layer 1's q_proj alpha 3.
	if r, _, _ := a.Module(0, 6); r != 2 {
		t.Errorf("layer 0 down_proj rank %d, want 2 from rank_pattern", r)
	}
	if _, al, _ := a.Module(1, 0); al != 3 {
		t.Errorf("layer 1 q_proj alpha %v, want 3 from alpha_pattern", al)
	}
}
