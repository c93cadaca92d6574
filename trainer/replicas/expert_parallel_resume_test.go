package replicas

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
	"github.com/grpo-dev/grpo/optim"
	"github.com/grpo-dev/grpo/update"
)

// TestExpertParallelResume: Qwen3-MoE tiny trained 2 steps on 2
// expert-parallel ranks and checkpointed (SaveAdapter, SaveOptimizer:
// the files one device's checkpoint holds, the same tensor names and
// shapes) resumes on 2 ranks, on 4, and on one device
// (lora.Load, LoadState), and the resumed 3rd step ends within 1e-5
// (relative L2, the adapter as a whole; each parameter within 1e-3 on
// cpu, 1e-5 on emu: checkRanksAdapters says why) of the uninterrupted
// run's 3rd step, its loss and gradient norm within 1e-5 relative; and a
// checkpoint of one device's run resumes on 2 ranks as the one device
// goes on. A lost optimizer state (Adam restarting from zero moments at
// step 3) moves the adapter by far more (checked).
//
// gpt-oss's MXFP4 checkpoint (gpt_oss-tiny-mxfp4, its experts' adapters
// saved fused) holds to the same bounds: on cpu its experts load
// dequantized; on emu (TestExpertParallelResumeEmu) each rank keeps its
// experts' MXFP4 blocks and scales alone.
func TestExpertParallelResume(t *testing.T) {
	cpuBackend := func() kernels.Backend { return cpu.New() }
	t.Run("qwen3-moe-tiny", func(t *testing.T) { checkResume(t, "qwen3-moe-tiny", epLoRA, cpuBackend, []int{2, 4}, 1e-3) })
	t.Run("gpt_oss-tiny-mxfp4", func(t *testing.T) { checkResume(t, "gpt_oss-tiny-mxfp4", gptOssLoRA, cpuBackend, []int{2, 4}, 1e-3) })
}

// TestExpertParallelResumeEmu is the same on emu devices, resumed on 2
// ranks and on one device.
func TestExpertParallelResumeEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("trains under the emulator")
	}
	emuBackend := func() kernels.Backend {
		b := emu.New()
		t.Cleanup(func() { b.Close() })
		return b
	}
	t.Run("qwen3-moe-tiny", func(t *testing.T) { checkResume(t, "qwen3-moe-tiny", epLoRA, emuBackend, []int{2}, 1e-5) })
	t.Run("gpt_oss-tiny-mxfp4", func(t *testing.T) { checkResume(t, "gpt_oss-tiny-mxfp4", gptOssLoRA, emuBackend, []int{2}, 1e-5) })
}

// gptOssLoRA adapts attention and every expert's projections (gpt-oss's
// router is adapted by no PEFT release).
var gptOssLoRA = lora.Config{Rank: 4, Alpha: 8, TargetModules: []string{"q_proj", "v_proj", "gate_proj", "up_proj", "down_proj"}}

func checkResume(t *testing.T, name string, lcfg lora.Config, open func() kernels.Backend, rankCounts []int, perParam float64) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := tinymodel.Write(dir, filepath.Join("..", "..", "testdata", "models", name)); err != nil {
		t.Fatal(err)
	}
	ocfg := optim.DefaultConfig()
	ocfg.LR = 1e-2
	st := update.Settings{Loss: loss.DefaultConfig(), MaxTokens: 8, MicroBatchTokens: 1 << 12, MaxSteps: 10}
	openEP := func(ranks int, adapter, state string) *Set {
		bes := make([]kernels.Backend, ranks)
		for i := range bes {
			bes[i] = open()
		}
		s, err := OpenExpertParallel(ctx, ExpertSpec{Backends: bes, Model: dir, LoRA: lcfg, Seed: 7, Optimizer: ocfg, Adapter: adapter, OptimizerState: state})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(ctx) })
		s.Check = true
		for r := range s.Len() {
			noAuxLoss(s.Replica(r).Policy.Model)
		}
		return s
	}
	// openOne is one device's policy: new, or resumed from a checkpoint's
	// adapter and optimizer state.
	openOne := func(adapter, state string) update.Policy {
		be := open()
		l, err := loader.Open(ctx, loader.Spec{Model: dir, Backend: be})
		if err != nil {
			t.Fatal(err)
		}
		var ad *lora.Adapter
		if adapter != "" {
			ad, err = lora.Load(adapter, l.Base)
		} else {
			ad, err = lora.New(l.Base, lcfg, 7)
		}
		if err != nil {
			t.Fatal(err)
		}
		opt, err := optim.NewAdamW(be, update.OptimizerParams(ad), ocfg)
		if err != nil {
			t.Fatal(err)
		}
		if state != "" {
			if err := opt.LoadState(state); err != nil {
				t.Fatal(err)
			}
		}
		noAuxLoss(l.Base)
		return update.Policy{Model: l.Base.WithAdapter(ad), Adapter: ad, Optimizer: opt}
	}
	oneStep := func(p update.Policy, s *Set, step int) update.Stats {
		res, err := update.Step(p, inRankOrder(t, s, scored(4, uint64(step)), 4, st), 4, st)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	epStep := func(s *Set, step int) update.Stats {
		res, err := s.Step(scored(4, uint64(step)), 4, st)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	ep, one := openEP(2, "", ""), openOne("", "")
	for step := 1; step <= 2; step++ {
		epStep(ep, step)
		oneStep(one, ep, step)
	}
	ckEP, ckOne := t.TempDir(), t.TempDir()
	if err := ep.SaveAdapter(filepath.Join(ckEP, "adapter"), dir); err != nil {
		t.Fatal(err)
	}
	if err := ep.SaveOptimizer(filepath.Join(ckEP, "optimizer.safetensors")); err != nil {
		t.Fatal(err)
	}
	if err := lora.Save(filepath.Join(ckOne, "adapter"), one.Adapter, dir); err != nil {
		t.Fatal(err)
	}
	if err := one.Optimizer.SaveState(filepath.Join(ckOne, "optimizer.safetensors")); err != nil {
		t.Fatal(err)
	}
	sameLayout(t, filepath.Join(ckEP, "optimizer.safetensors"), filepath.Join(ckOne, "optimizer.safetensors"))
	sameLayout(t, filepath.Join(ckEP, "adapter", lora.WeightsFileName), filepath.Join(ckOne, "adapter", lora.WeightsFileName))

	wantEPRes, wantOneRes := epStep(ep, 3), oneStep(one, ep, 3)
	wantEP, wantOne := setValues(ep), adapterValues(one)

	for _, ranks := range rankCounts {
		t.Run(fmt.Sprintf("expert-parallel checkpoint on %d ranks", ranks), func(t *testing.T) {
			s := openEP(ranks, filepath.Join(ckEP, "adapter"), filepath.Join(ckEP, "optimizer.safetensors"))
			sameStep(t, epStep(s, 3), wantEPRes)
			compareAdapters(t, setValues(s), wantEP, perParam)
		})
	}
	t.Run("expert-parallel checkpoint on one device", func(t *testing.T) {
		p := openOne(filepath.Join(ckEP, "adapter"), filepath.Join(ckEP, "optimizer.safetensors"))
		sameStep(t, oneStep(p, ep, 3), wantEPRes)
		compareAdapters(t, adapterValues(p), wantEP, perParam)
	})
	t.Run("one device's checkpoint on 2 ranks", func(t *testing.T) {
		s := openEP(2, filepath.Join(ckOne, "adapter"), filepath.Join(ckOne, "optimizer.safetensors"))
		sameStep(t, epStep(s, 3), wantOneRes)
		compareAdapters(t, setValues(s), wantOne, perParam)
	})
	t.Run("without the optimizer state", func(t *testing.T) {
		s := openEP(2, filepath.Join(ckEP, "adapter"), "")
		epStep(s, 3)
		d := relL2(setValues(s), wantEP)
		t.Logf("resumed with new moments: the adapter ends %.2g from the uninterrupted run's", d)
		if !(d > 100*1e-5) {
			t.Errorf("resumed with new moments, the adapter ends %.2g from the uninterrupted run's: the test cannot tell a lost optimizer state", d)
		}
	})
}

// noAuxLoss turns HF's load-balancing loss off (see
// checkExpertParallelSteps: it is not linear in the tokens of a pass).
func noAuxLoss(m *model.Model) { m.Config.RouterAuxLossCoef = 0 }

// sameLayout checks that two safetensors files hold the same tensor
// names with the same shapes and dtypes, and the same metadata.
func sameLayout(t *testing.T, got, want string) {
	t.Helper()
	g, err := safetensors.Open(got)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	w, err := safetensors.Open(want)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !slices.Equal(g.Names(), w.Names()) {
		t.Fatalf("%s holds %d tensors, %s %d, or other names", got, len(g.Names()), want, len(w.Names()))
	}
	for _, name := range w.Names() {
		a, _ := g.Tensor(name)
		b, _ := w.Tensor(name)
		if a.DType != b.DType || !slices.Equal(a.Shape, b.Shape) {
			t.Errorf("%s: %s %v in %s, %s %v in %s", name, a.DType, a.Shape, got, b.DType, b.Shape, want)
		}
	}
	if gm, wm := fmt.Sprint(g.Metadata()), fmt.Sprint(w.Metadata()); gm != wm {
		t.Errorf("%s's metadata %s, %s's %s", got, gm, want, wm)
	}
}

// sameStep holds a resumed step's loss and gradient norm to 1e-5
// relative of the uninterrupted run's.
func sameStep(t *testing.T, got, want update.Stats) {
	t.Helper()
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"loss", got.Loss.Loss, want.Loss.Loss}, {"gradient norm", got.Optimizer.GradNorm, want.Optimizer.GradNorm}} {
		if d := math.Abs(c.got-c.want) / math.Abs(c.want); !(d <= 1e-5) {
			t.Errorf("resumed step 3: %s %v, uninterrupted %v (relative %.2g)", c.what, c.got, c.want, d)
		}
	}
}

// setValues is the set's adapter by parameter name: the replicated
// parameters rank 0's (Check holds the ranks to them), each expert's
// its rank's.
func setValues(s *Set) map[string][]float32 {
	out := map[string][]float32{}
	for r := range s.Len() {
		rep := s.Replica(r)
		for _, p := range rep.Policy.Adapter.Params() {
			if _, ok := out[p.Name]; !ok {
				out[p.Name] = download(rep.Backend, p.Value)
			}
		}
	}
	return out
}

func adapterValues(p update.Policy) map[string][]float32 {
	out := map[string][]float32{}
	for _, q := range p.Adapter.Params() {
		out[q.Name] = download(p.Model.Backend, q.Value)
	}
	return out
}

// compareAdapters holds got to want: the same parameters, within 1e-5
// relative L2 as a whole and perParam each.
func compareAdapters(t *testing.T, got, want map[string][]float32, perParam float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d parameters resumed, %d uninterrupted", len(got), len(want))
	}
	worst, worstName := -1.0, ""
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Fatalf("%s is not in the resumed adapter", name)
		}
		if d := relL2(map[string][]float32{name: g}, map[string][]float32{name: w}); !(d <= worst) {
			worst, worstName = d, name
		}
	}
	whole := relL2(got, want)
	t.Logf("after the resumed step: the adapter within %.2g of the uninterrupted run's (relative L2); the farthest parameter, %s, %.2g", whole, worstName, worst)
	if !(whole <= 1e-5) {
		t.Errorf("the resumed adapter is %.2g from the uninterrupted run's (relative L2), want ≤ 1e-5", whole)
	}
	if !(worst <= perParam) {
		t.Errorf("%s is %.2g from the uninterrupted run's (relative L2), want ≤ %g", worstName, worst, perParam)
	}
}

// relL2 is |got − want| / |want| over every parameter of want.
func relL2(got, want map[string][]float32) float64 {
	var d, n float64
	for name, w := range want {
		g := got[name]
		for i := range w {
			x := float64(w[i])
			if i < len(g) {
				x -= float64(g[i])
			}
			d += x * x
			n += float64(w[i]) * float64(w[i])
		}
	}
	return math.Sqrt(d / n)
}
