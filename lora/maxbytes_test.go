package lora

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMaxWeightsBytesHoldsTheAdapters: every committed adapter's weights
// file fits the bound its config gives, and the bound is not loose by more
// than the header's room and a small factor (the configs adapt every
// projection, so only the dtype and header separate file and bound).
func TestMaxWeightsBytesHoldsTheAdapters(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(root, "testdata", "lora", "*", ConfigFileName))
	if len(dirs) < 3 {
		t.Fatalf("found %d adapters", len(dirs))
	}
	for _, cfgPath := range dirs {
		dir := filepath.Dir(cfgPath)
		config, err := os.ReadFile(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		pc, err := parsePEFTConfig(config)
		if err != nil {
			t.Fatal(err)
		}
		m := loadModel(t, filepath.Base(pc.baseModel))
		st, err := os.Stat(filepath.Join(dir, WeightsFileName))
		if err != nil {
			t.Fatal(err)
		}
		bound, err := MaxWeightsBytes(config, m)
		if err != nil {
			t.Fatal(err)
		}
		if bound < st.Size() || bound > 8*st.Size()+2<<20 {
			t.Errorf("%s: %d bytes, bound %d", dir, st.Size(), bound)
		}
	}
	if _, err := MaxWeightsBytes([]byte(`{"peft_type":"LORA","r":"x"}`), loadModel(t, "qwen3-tiny")); err == nil {
		t.Error("a bad config gave a bound")
	}
}
