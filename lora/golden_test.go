package lora

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/lora/ours (then rerun testdata/reference/peft_check.py)")

// TestOursAdapterFiles pins the adapter peft_check.py reads: Save of the
// fixed adapter must reproduce the committed files byte for byte, so the
// Python logits stay those of what Save writes today. -update rewrites
// them.
func TestOursAdapterFiles(t *testing.T) {
	m := loadModel(t, "qwen3-tiny")
	a := newOursAdapter(t, m)
	committed := filepath.Join(root, "testdata", "lora", "ours")
	if *update {
		if err := Save(committed, a, "testdata/models/qwen3-tiny"); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := filepath.Join(t.TempDir(), "ours")
	if err := Save(dir, a, "testdata/models/qwen3-tiny"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ConfigFileName, WeightsFileName} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from testdata/lora/ours/%s; if the change is intended run go test ./lora -run TestOursAdapterFiles -update and /usr/bin/python3 testdata/reference/peft_check.py", name, name)
		}
	}
}

// TestOursGolden: the adapter grpo wrote, read and applied by the
// independent PEFT-convention reader in peft_check.py (float64), gives the
// logits grpo computes with the adapter it loads back.
func TestOursGolden(t *testing.T) {
	checkReaderLogits(t, "ours", "qwen3-tiny")
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
