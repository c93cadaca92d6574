package replicas

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/optim"
	"github.com/grpo-dev/grpo/update"
)

// epLoRA adapts attention, every expert's projections and the routers.
var epLoRA = lora.Config{Rank: 4, Alpha: 8, TargetModules: []string{"q_proj", "v_proj", "gate_proj", "up_proj", "down_proj", "gate"}}

// TestExpertParallelStepsMatchOneDevice: Qwen3-MoE tiny (8 experts, 2
// sparse layers) on two expert-parallel ranks, each training its share
// of a step's groups, takes the steps one device takes over the whole
// batch: for 3 steps the loss and gradient norm within 1e-5 relative, and
// then every replicated adapter parameter on each rank, and each rank's
// experts' adapters, within 1e-5 (relative L2, per parameter) of the one
// device's. Per step and pass (one per rank here): one ExchangeCounts and
// two AllToAll per sparse layer forward, two AllToAll backward; and two
// all-reduces per step (the replicated gradients, the norm's squares).
//
// With micro-batches of 32 tokens the ranks' shares take different
// numbers of passes (checked), and the rank with fewer pads with idle
// ones: the same numbers, a pass's collectives per pass of the most. With
// the KL penalty on, each pass adds the reference's forward (one
// ExchangeCounts and two AllToAll per sparse layer).
func TestExpertParallelStepsMatchOneDevice(t *testing.T) {
	for _, c := range []struct {
		micro int
		beta  float64
	}{{1 << 12, 0}, {32, 0}, {32, 0.05}} {
		t.Run(fmt.Sprintf("micro-batch tokens %d, beta %g", c.micro, c.beta), func(t *testing.T) {
			checkExpertParallelSteps(t, func() kernels.Backend { return cpu.New() }, 1e-3, c.micro, c.beta)
		})
	}
}

// TestExpertParallelStepsMatchOneDeviceEmu is the same on emu devices.
func TestExpertParallelStepsMatchOneDeviceEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("trains under the emulator")
	}
	checkExpertParallelSteps(t, func() kernels.Backend {
		b := emu.New()
		t.Cleanup(func() { b.Close() })
		return b
	}, 1e-5, 1<<12, 0)
}

// checkExpertParallelSteps runs the steps on backends from open, in
// passes of micro tokens with KL coefficient beta, and holds each adapter
// parameter to perParam (checkRanksAdapters).
func checkExpertParallelSteps(t *testing.T, open func() kernels.Backend, perParam float64, micro int, beta float64) {
	dir := t.TempDir()
	if err := tinymodel.Write(dir, filepath.Join("..", "..", "testdata", "models", "qwen3-moe-tiny")); err != nil {
		t.Fatal(err)
	}
	ocfg := optim.DefaultConfig()
	ocfg.LR = 1e-2
	be := open()
	l, err := loader.Open(context.Background(), loader.Spec{Model: dir, Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	ad, err := lora.New(l.Base, epLoRA, 7)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := optim.NewAdamW(be, update.OptimizerParams(ad), ocfg)
	if err != nil {
		t.Fatal(err)
	}
	one := update.Policy{Model: l.Base.WithAdapter(ad), Adapter: ad, Optimizer: opt}
	s, err := OpenExpertParallel(context.Background(), ExpertSpec{Backends: []kernels.Backend{open(), open()}, Model: dir, LoRA: epLoRA, Seed: 7, Optimizer: ocfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	s.Check = true
	// HF's load-balancing loss is over a pass's tokens and not linear in
	// them: one pass over the whole batch and one per rank's share take
	// different losses by definition (as data parallelism's shares do).
	// The routers train here through the routing weights alone.
	for _, m := range []*model.Model{one.Model, s.Replica(0).Policy.Model, s.Replica(1).Policy.Model} {
		m.Config.RouterAuxLossCoef = 0
	}
	set := update.Settings{Loss: loss.DefaultConfig(), MaxTokens: 8, MicroBatchTokens: micro, MaxSteps: 10}
	set.Loss.Beta = beta
	forwards := 1 // per pass: the policy's, and the KL reference's
	if beta != 0 {
		forwards = 2
	}
	sparse := one.Model.Config.SparseLayers()
	passes, padded := 0, false
	for step := 1; step <= 3; step++ {
		rollouts := scored(4, uint64(step))
		most, fewest := rankPasses(t, s, rollouts, set)
		passes += most
		padded = padded || fewest < most
		want, err := update.Step(one, inRankOrder(t, s, rollouts, 4, set), 4, set)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Step(rollouts, 4, set)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what      string
			got, want float64
		}{{"loss", got.Loss.Loss, want.Loss.Loss}, {"gradient norm", got.Optimizer.GradNorm, want.Optimizer.GradNorm}} {
			if d := math.Abs(c.got-c.want) / math.Abs(c.want); !(d <= 1e-5) {
				t.Errorf("step %d: %s %v under expert parallelism, %v on one device (relative %.2g)", step, c.what, c.got, c.want, d)
			}
		}
		wantC, wantA := passes*sparse*forwards, passes*sparse*(2*forwards+2)
		if c, a := s.Calls("counts"), s.Calls("all-to-all"); c != wantC || a != wantA {
			t.Errorf("after step %d (%d passes): %d count exchanges and %d all-to-alls, want %d and %d", step, passes, c, a, wantC, wantA)
		}
		if r := s.Calls("all-reduce"); r != 2*step {
			t.Errorf("after step %d: %d all-reduces, want %d", step, r, 2*step)
		}
	}
	checkRanksAdapters(t, one, s, perParam)
	checkSavedAdapter(t, s, l.Base, dir)
	if micro < 1<<12 && !padded {
		t.Errorf("micro-batches of %d tokens: the ranks' shares took as many passes in every step; the test wants a step that pads", micro)
	}
}

// checkSavedAdapter saves the ranks' adapter as one PEFT directory,
// loads it onto base (every expert), and checks that it holds every
// rank's values, bit for bit: the replicated ones once, each expert's
// from its rank; and loaded onto each rank's model, the rank's own
// parameters, bit for bit.
func checkSavedAdapter(t *testing.T, s *Set, base *model.Model, modelDir string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "adapter")
	if err := s.SaveAdapter(dir, modelDir); err != nil {
		t.Fatal(err)
	}
	loaded, err := lora.Load(dir, base)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Free()
	want := map[string][]float32{}
	for r := range s.Len() {
		rep := s.Replica(r)
		for _, p := range rep.Policy.Adapter.Params() {
			want[p.Name] = download(rep.Backend, p.Value)
		}
	}
	got := loaded.Params()
	if len(got) != len(want) {
		t.Fatalf("the saved adapter loads %d parameters, the ranks hold %d distinct ones", len(got), len(want))
	}
	for _, p := range got {
		if v := download(base.Backend, p.Value); !slices.Equal(v, want[p.Name]) {
			t.Errorf("saved %s differs from its rank's", p.Name)
		}
	}
	for r := range s.Len() {
		rep := s.Replica(r)
		onto, err := lora.Load(dir, rep.Policy.Model)
		if err != nil {
			t.Fatal(err)
		}
		own, back := rep.Policy.Adapter.Params(), onto.Params()
		if len(back) != len(own) {
			t.Errorf("rank %d: the saved adapter loads %d parameters onto it, it holds %d", r, len(back), len(own))
		}
		for _, p := range back {
			if v := download(rep.Backend, p.Value); !slices.Equal(v, want[p.Name]) {
				t.Errorf("rank %d: %s loaded back differs from the rank's", r, p.Name)
			}
		}
		onto.Free()
	}
}

// rankPasses is the most and fewest passes the ranks' shares of a step of
// rollouts take.
func rankPasses(t *testing.T, s *Set, rollouts []update.Scored, st update.Settings) (most, fewest int) {
	t.Helper()
	b, err := update.Prepare(rollouts, 4, st)
	if err != nil {
		t.Fatal(err)
	}
	whole := loss.CountBatch(b.Samples, st.Loss)
	fewest = math.MaxInt
	for i, share := range s.share(b) {
		n := loss.Passes(s.Replica(i).Policy.Model, share, whole, st.Loss, st.MaxTokens, st.MicroBatchTokens)
		most, fewest = max(most, n), min(fewest, n)
	}
	return most, fewest
}

// inRankOrder is rollouts with the groups s.Step gives rank 0 first,
// then rank 1's, …: one device then runs every expert's rows in the order
// the ranks' rows reach it, rank after rank, and sums their gradients in
// the same order (Adam's per-element normalisation would magnify the
// rounding of another order in the smallest gradients).
func inRankOrder(t *testing.T, s *Set, rollouts []update.Scored, groupSize int, st update.Settings) []update.Scored {
	t.Helper()
	b, err := update.Prepare(rollouts, groupSize, st)
	if err != nil {
		t.Fatal(err)
	}
	groups := 0
	if n := len(b.Group); n > 0 {
		groups = b.Group[n-1] + 1
	}
	costs := make([]int, groups)
	for i, g := range b.Group {
		costs[g] += b.Samples[i].SeqLen()
	}
	device := splitGroups(costs, s.Len())
	var out []update.Scored
	for d := range s.Len() {
		for g := range groups {
			if device[g] == d {
				out = append(out, rollouts[g*groupSize:(g+1)*groupSize]...)
			}
		}
	}
	return out
}

// checkRanksAdapters compares every rank's adapter parameters, which
// name their expert, with the one device's of the same name: every
// parameter of the one device's must be on some rank, an expert's on
// exactly one. The adapter as a whole (every rank's parameters, each
// replicated one once per rank) must be within 1e-5 relative L2, and
// each parameter within perParam: 1e-5 on emu, 1e-3 on cpu, where the
// two paths round differently (the BLAS GEMM's sums depend on its row
// count) and Adam's per-element step, g/(|g| + eps), magnifies the
// rounding of a gradient element near eps: the smallest experts'
// gradients here are 1e-9 to 1e-7, and one of their B matrices ends
// 7.8e-5 away after 3 steps (measured) while the adapter stays within
// 4.4e-6. A lost or misrouted row moves a parameter by O(1) of itself.
func checkRanksAdapters(t *testing.T, one update.Policy, s *Set, perParam float64) {
	t.Helper()
	want := map[string][]float32{}
	for _, p := range one.Adapter.Params() {
		want[p.Name] = download(one.Model.Backend, p.Value)
	}
	seen := map[string]int{}
	var d, n, worst float64
	worstName := ""
	for r := range s.Len() {
		rep := s.Replica(r)
		for _, p := range rep.Policy.Adapter.Params() {
			w, ok := want[p.Name]
			if !ok {
				t.Fatalf("rank %d holds %s, which one device's adapter has not", r, p.Name)
			}
			seen[p.Name]++
			got := download(rep.Backend, p.Value)
			var pd, pn float64
			for i := range w {
				pd += (float64(got[i]) - float64(w[i])) * (float64(got[i]) - float64(w[i]))
				pn += float64(w[i]) * float64(w[i])
			}
			d, n = d+pd, n+pn
			if rel := math.Sqrt(pd / pn); !(rel <= worst) {
				worst, worstName = rel, fmt.Sprintf("rank %d %s", r, p.Name)
			}
		}
	}
	t.Logf("after the steps: the adapter within %.2g of one device's (relative L2); the farthest parameter, %s, %.2g", math.Sqrt(d/n), worstName, worst)
	if !(math.Sqrt(d) <= 1e-5*math.Sqrt(n)) {
		t.Errorf("the ranks' adapter is %.2g from one device's (relative L2), want ≤ 1e-5", math.Sqrt(d/n))
	}
	if !(worst <= perParam) {
		t.Errorf("%s is %.2g from one device's (relative L2), want ≤ %g", worstName, worst, perParam)
	}
	for name := range want {
		expert := strings.Contains(name, ".experts.")
		if n := seen[name]; (expert && n != 1) || (!expert && n != s.Len()) {
			t.Errorf("%s is held by %d ranks, want %s", name, n, map[bool]string{true: "1", false: fmt.Sprint(s.Len())}[expert])
		}
	}
}

func download(be kernels.Backend, b kernels.Buffer) []float32 {
	v := make([]float32, b.Len())
	be.Download(v, b)
	if err := be.Sync(); err != nil {
		panic(err)
	}
	return v
}
