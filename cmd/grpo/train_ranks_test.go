package main

import (
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/model/safetensors"
	"github.com/grpo-dev/grpo/rundir"
)

// rankProcess is grpo (this test binary) launched as torchrun would launch
// rank of world, rank 0 listening at port; its scratch directories go
// under tmp.
func rankProcess(rank, world int, port, tmp string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(args, "\x1f"), "RANK="+strconv.Itoa(rank), "WORLD_SIZE="+strconv.Itoa(world), "LOCAL_RANK=0",
		"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port, "TMPDIR="+tmp, "GRPO_RENDEZVOUS_TIMEOUT=20s",
		"GRPO_CHECK_REPLICAS=1") // every device's adapter hashed after each update, all of the job's compared
	return cmd
}

// freePort is a loopback port nothing listens on.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// runRanks starts cmds and waits for all, at most limit.
func runRanks(t *testing.T, limit time.Duration, cmds ...*exec.Cmd) ([]string, []error) {
	t.Helper()
	outs, errs := make([]string, len(cmds)), make([]error, len(cmds))
	done := make(chan int, len(cmds))
	for i, c := range cmds {
		go func() {
			b, err := c.CombinedOutput()
			outs[i], errs[i] = string(b), err
			done <- i
		}()
	}
	for range cmds {
		select {
		case <-done:
		case <-time.After(limit):
			for _, c := range cmds {
				if c.Process != nil {
					c.Process.Kill()
				}
			}
			t.Fatalf("the rank processes did not all exit within %v", limit)
		}
	}
	return outs, errs
}

// readRun is a run directory's metric rows and final adapter.
func readRun(t *testing.T, out string) ([]map[string]any, map[string][]float32) {
	t.Helper()
	rows, err := rundir.ReadJSONL(filepath.Join(out, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(filepath.Join(out, "adapter", "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ad := map[string][]float32{}
	for _, n := range f.Names() {
		tn, _ := f.Tensor(n)
		if ad[n], err = tn.Float32s(); err != nil {
			t.Fatal(err)
		}
	}
	return rows, ad
}

// TestTrainTwoProcessesReproducesOne: two grpo train processes launched
// as torchrun launches them (RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1,
// MASTER_PORT), one cpu device each, train 3 steps as one job — the
// step's examples and groups spread over both, the gradients summed over
// TCP (kernels/netcoll) — and write what one process alone does: rewards
// and token counts equal, loss and grad_norm within 1e-5 relative (the
// loss within 1e-5 of the advantages' std, the size of its nearly
// cancelling terms), adapters within runAdapterBound. Only rank 0 writes the run
// directory (rank 1, given the same --output, runs in a scratch directory
// it removes), and its evals (before step 1 and after step 2, played
// across both processes) score as one process's; two processes of two cpu devices each do the same;
// resuming the two-process job for 2 more steps matches one process
// resumed likewise.
func TestTrainTwoProcessesReproducesOne(t *testing.T) {
	if testing.Short() {
		t.Skip("two grpo processes train 3 steps, then 2 more")
	}
	// 16 rollouts: 4 groups of 4 a step, so 4 devices each train one.
	dir, cfg := parityConfig(t, 16, 3, "[eval]\ninterval = 2\nnum_examples = 4\nrollouts_per_example = 2\n")
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o755)
	one := filepath.Join(dir, "one")
	code, _, stderr := runCLIQuiet(t, "train", cfg, "--output", one)
	if code != 0 {
		t.Fatalf("one process: exit %d: %s", code, stderr)
	}
	two := filepath.Join(dir, "two")
	port := freePort(t)
	outs, errs := runRanks(t, 3*time.Minute, rankProcess(0, 2, port, tmp, "train", cfg, "--output", two), rankProcess(1, 2, port, tmp, "train", cfg, "--output", two))
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v\n%s", r, err, outs[r])
		}
	}
	compareRuns(t, one, two, 3)
	compareEvals(t, one, two)
	// Two devices a process: 4 ranks, rank 0's two joined at its hub.
	four := filepath.Join(dir, "four")
	outs, errs = runRanks(t, 3*time.Minute, rankProcess(0, 2, port, tmp, "train", cfg, "--output", four, "--devices", "cpu:0-1"),
		rankProcess(1, 2, port, tmp, "train", cfg, "--output", four, "--devices", "cpu:0-1"))
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d of 2 × 2 devices: %v\n%s", r, err, outs[r])
		}
	}
	compareRuns(t, one, four, 3)
	if log, _ := os.ReadFile(filepath.Join(four, "log.txt")); !strings.Contains(string(log), "4 devices across 2 processes") {
		t.Errorf("rank 0's log.txt does not say the job spans 4 devices of 2 processes")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("rank 1 left %d entries in its TMPDIR, e.g. %s", len(left), left[0].Name())
	}
	log, _ := os.ReadFile(filepath.Join(two, "log.txt"))
	if !strings.Contains(string(log), "2 devices across 2 processes") {
		t.Errorf("rank 0's log.txt does not say the job spans 2 processes:\n%s", log)
	}
	// Resume both for 2 more steps (max_steps raised, as a user resumes
	// to train longer).
	for _, d := range []string{one, two} {
		text, _ := os.ReadFile(filepath.Join(d, "config.toml"))
		os.WriteFile(filepath.Join(d, "config.toml"), []byte(strings.Replace(string(text), "max_steps = 3", "max_steps = 5", 1)), 0o644)
	}
	if code, _, stderr := runCLIQuiet(t, "train", "--resume", one); code != 0 {
		t.Fatalf("one process resumed: exit %d: %s", code, stderr)
	}
	outs, errs = runRanks(t, 3*time.Minute, rankProcess(0, 2, port, tmp, "train", "--resume", two), rankProcess(1, 2, port, tmp, "train", "--resume", two))
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d resumed: %v\n%s\nrank 1:\n%s", r, err, outs[r], outs[1])
		}
	}
	compareRuns(t, one, two, 5)
}

// runAdapterBound is compareRuns' bound on the adapters' largest
// difference after a few steps: the ranks' gradients are summed in
// another order than one device's, and AdamW carries the difference on.
// Measured with OpenBLAS's Haswell kernels 5.3e-6 (two processes), 1.6e-6
// (two of two devices) and 2.0e-6 (--devices); with its AVX-512 kernels
// (an AMD EPYC, OPENBLAS_CORETYPE unset) 1.12e-5 (two of two devices).
// About 3× the worst.
const runAdapterBound = 3e-5

// compareRuns checks the metrics and adapter of the run in two against
// those of the run in one (steps steps each): rewards and token counts
// equal, loss and grad_norm within 1e-5 relative (the loss within 1e-5 of
// the advantages' std, the size of its nearly cancelling terms), adapters
// within runAdapterBound.
func compareRuns(t *testing.T, one, two string, steps int) {
	t.Helper()
	oneRows, oneAd := readRun(t, one)
	twoRows, twoAd := readRun(t, two)
	if len(oneRows) != steps || len(twoRows) != steps {
		t.Fatalf("%d and %d metric rows, want %d", len(oneRows), len(twoRows), steps)
	}
	for i := range oneRows {
		for _, key := range []string{"reward", "tokens/total", "loss", "grad_norm"} {
			w, ok := oneRows[i][key].(float64)
			g, _ := twoRows[i][key].(float64)
			tol := 1e-5 * math.Abs(w)
			switch key {
			case "reward", "tokens/total":
				tol = 0
			case "loss":
				adv, _ := oneRows[i]["advantage/std"].(float64)
				tol = 1e-5 * max(math.Abs(w), adv)
			}
			if !ok || math.IsNaN(g) || math.Abs(g-w) > tol {
				t.Errorf("step %d: %s %.9g in %s, %.9g in %s", i+1, key, g, filepath.Base(two), w, filepath.Base(one))
			}
		}
		if gn, _ := oneRows[i]["grad_norm"].(float64); !(gn > 0) {
			t.Errorf("step %d: grad_norm %v: nothing was trained to compare", i+1, gn)
		}
		t.Logf("step %d: loss %.9g vs %.9g, grad_norm %.9g vs %.9g", i+1, twoRows[i]["loss"], oneRows[i]["loss"], twoRows[i]["grad_norm"], oneRows[i]["grad_norm"])
	}
	worst := 0.0
	for n, w := range oneAd {
		g := twoAd[n]
		if len(g) != len(w) {
			t.Fatalf("adapter %s: %d values in %s, %d in %s", n, len(g), filepath.Base(two), len(w), filepath.Base(one))
		}
		for k := range w {
			worst = max(worst, math.Abs(float64(g[k]-w[k])))
		}
	}
	if worst > runAdapterBound || len(oneAd) != len(twoAd) {
		t.Errorf("adapters differ by up to %.3g (bound %g); %d and %d tensors", worst, runAdapterBound, len(twoAd), len(oneAd))
	}
	t.Logf("after %d steps: adapters within %.3g", steps, worst)
}

// TestTrainRankKilled: two grpo train processes train as one job with a
// checkpoint every step; rank 1 is killed (SIGKILL: no goodbye) once rank
// 0 has logged two steps, so mid-step; rank 0 exits non-zero within 60 s
// with a message naming rank 1, and its last checkpoint is intact (its
// checksums verify). Likewise rank 1 when rank 0 is killed. A job whose rank 1 never starts ends rank 0 at the
// rendezvous timeout, naming rank 1.
func TestTrainRankKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("two grpo processes")
	}
	dir, cfg := parityConfig(t, 16, 1000, "[checkpoint]\ninterval = 1\n")
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o755)
	for _, victim := range []int{1, 0} {
		out := filepath.Join(dir, fmt.Sprintf("run-%d", victim))
		msg := killRank(t, cfg, out, tmp, victim)
		if want := fmt.Sprintf("rank %d of 2", victim); !strings.Contains(msg, want) || !strings.Contains(msg, "is gone") {
			t.Errorf("rank %d does not name rank %d:\n%s", 1-victim, victim, msg)
		}
		if victim == 0 {
			continue // rank 0 wrote the checkpoints, and was killed
		}
		steps, err := rundir.Checkpoints(filepath.Join(out, "checkpoints"))
		if err != nil || len(steps) == 0 {
			t.Fatalf("no checkpoint: %v", err)
		}
		if err := rundir.VerifyChecksums(rundir.CheckpointPath(filepath.Join(out, "checkpoints"), steps[len(steps)-1])); err != nil {
			t.Errorf("the last checkpoint (step %d): %v", steps[len(steps)-1], err)
		}
	}

	// Rank 1 never starts.
	lone := rankProcess(0, 2, freePort(t), tmp, "train", cfg, "--output", filepath.Join(dir, "lone"))
	lone.Env = append(lone.Env, "GRPO_RENDEZVOUS_TIMEOUT=2s")
	start := time.Now()
	outs, errs := runRanks(t, time.Minute, lone)
	if errs[0] == nil || !strings.Contains(outs[0], "rank(s) [1] of 2 did not reach rank 0") {
		t.Errorf("rank 0 alone: %v: %s", errs[0], outs[0])
	}
	t.Logf("rank 0 alone ended after %v: %s", time.Since(start).Round(time.Millisecond), lastLine(outs[0]))
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("rank 0 alone took %v to give up on a 2 s rendezvous", took)
	}
}

// killRank starts a two-process job writing out, kills rank victim
// (SIGKILL) once rank 0 has logged two steps, and returns what the other
// rank printed; it fails the test unless that rank exits non-zero within
// 60 s.
func killRank(t *testing.T, cfg, out, tmp string, victim int) string {
	t.Helper()
	port := freePort(t)
	cmds := []*exec.Cmd{rankProcess(0, 2, port, tmp, "train", cfg, "--output", out), rankProcess(1, 2, port, tmp, "train", cfg, "--output", out)}
	var output strings.Builder
	survivor := cmds[1-victim]
	survivor.Stdout, survivor.Stderr = &output, &output
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Process.Kill()
	}
	exited := make(chan error, 1)
	go func() { exited <- survivor.Wait() }()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if rows, _ := rundir.ReadJSONL(filepath.Join(out, "metrics.jsonl")); len(rows) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("rank 0 logged no 2 steps within 2 minutes")
		}
	}
	cmds[victim].Process.Kill()
	cmds[victim].Wait()
	killed := time.Now()
	select {
	case err := <-exited:
		t.Logf("rank %d killed: rank %d exited after %v (%v): %s", victim, 1-victim, time.Since(killed).Round(time.Millisecond), err, lastLine(output.String()))
		if err == nil {
			t.Errorf("rank %d exited 0", 1-victim)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("rank %d still runs 60 s after rank %d was killed:\n%s", 1-victim, victim, output.String())
	}
	return output.String()
}

// compareEvals checks that two's eval rows hold one's rewards.
func compareEvals(t *testing.T, one, two string) {
	t.Helper()
	oneRows, err1 := rundir.ReadJSONL(filepath.Join(one, "eval.jsonl"))
	twoRows, err2 := rundir.ReadJSONL(filepath.Join(two, "eval.jsonl"))
	if err1 != nil || err2 != nil || len(oneRows) == 0 || len(oneRows) != len(twoRows) {
		t.Fatalf("eval rows: %d and %d (%v, %v)", len(oneRows), len(twoRows), err1, err2)
	}
	for i := range oneRows {
		if w, g := oneRows[i]["reward"], twoRows[i]["reward"]; w == nil || w != g {
			t.Errorf("eval row %d: reward %v in two processes, %v in one", i, g, w)
		}
	}
	t.Logf("%d eval rows alike", len(oneRows))
}
