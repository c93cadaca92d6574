package estimate

import (
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/model"
)

// TestLabQwenMoEFitsOneH200 is issue 26's estimate bar: the Lab's
// configs/rl/qwen-moe.toml as grpo init writes it (Qwen3.6-35B-A3B, 256
// rollouts of up to 1024 tokens) on cuda with an H200's 139 GiB free fits
// under recompute = "auto", which picks the least recompute that fits;
// keeping every activation does not.
func TestLabQwenMoEFitsOneH200(t *testing.T) {
	cfg, err := config.Load(filepath.Join("..", "examples", "workspace", "configs", "rl", "qwen-moe.toml"))
	if err != nil {
		t.Fatal(err)
	}
	mc, ok := model.Shape("qwen3.6-35b-a3b")
	if !ok {
		t.Fatal("no qwen3.6-35b-a3b shape")
	}
	const h200 = 139 << 30
	cfg.Recompute = "auto"
	e, err := Memory(cfg, mc, Options{Device: "cuda", Available: &Available{Bytes: h200, Known: true}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Peak > h200 {
		t.Fatalf("peak %s > 139 GiB under recompute %s", FormatBytes(e.Peak), e.RecomputeSetting)
	}
	t.Logf("peak %s (%s) under recompute %s: %s", FormatBytes(e.Peak), e.PeakPhase, e.RecomputeSetting, e.RecomputeWhy)
	cfg.Recompute = "none"
	none, err := Memory(cfg, mc, Options{Device: "cuda", Available: &Available{Bytes: h200, Known: true}})
	if err != nil {
		t.Fatal(err)
	}
	if none.Peak <= h200 {
		t.Errorf("keeping every activation peaks at %s, within 139 GiB: the bar no longer tests the choice", FormatBytes(none.Peak))
	}
}
