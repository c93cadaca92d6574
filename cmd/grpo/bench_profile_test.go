package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/bench"
	_ "github.com/grpo-dev/grpo/kernels/emu" // the cuda backend on the emulated device
	"github.com/grpo-dev/grpo/model"
)

// TestBenchProfileFlag: bench --help documents --profile (the flag, what
// it times, the cpu error, the JSON key); on the cpu backend --profile is
// one usage line naming the devices that can; under emu the table shows
// each phase's reconciliation line and entries, and --json carries every
// phase's profile with entries whose launches sum to the phase's counts.
func TestBenchProfileFlag(t *testing.T) {
	code, out, _ := runCLI("bench", "--help")
	for _, want := range []string{"--profile", "op by op", "timing events", `"profile"`, "wall_ms", "on cpu it is an error", "Under emu the times"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("bench --help (exit %d) lacks %q", code, want)
		}
	}
	const shape = "test-profile-tiny"
	model.Shapes[shape] = tinyStepShape
	defer delete(model.Shapes, shape)
	code, _, stderr := runCLI("bench", "--shape", shape, "--device", "cpu", "--profile")
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "--profile times the kernels") || !strings.Contains(stderr, "--device cuda") {
		t.Errorf("--profile on cpu: exit %d, %q; want one usage line", code, stderr)
	}
	run := func(asJSON bool) string {
		var buf bytes.Buffer
		old := stdout
		stdout = &buf
		defer func() { stdout = old }()
		err := runBench(benchOpts{shape: shape, device: "emu", dtype: "auto", json: asJSON, Options: bench.Options{Prefill: 4, Decode: 2, Batch: 2, Repeat: 1,
			PrefillChunk: 64, Temperature: 1, TrainSeqs: 1, TrainLen: 8, LoRARank: 4, NoMatmul: true, Profile: true}})
		if err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	text := run(false)
	t.Logf("the table:\n%s", text)
	for _, want := range []string{"profile of prefill 2x4: wall", "profile of decode step batch 2 (graph replay)", "profile of decode step batch 2 (op by op)",
		"profile of train micro-batch 1x8", "GPU idle between ops", "KERNEL", "MEAN µs", "graph (", "rmsnorm"} {
		if !strings.Contains(text, want) {
			t.Errorf("the table lacks %q:\n%s", want, text)
		}
	}
	var res struct {
		Profile []struct {
			Phase   string  `json:"phase"`
			WallMs  float64 `json:"wall_ms"`
			SpanMs  float64 `json:"span_ms"`
			Kernels []struct {
				Name     string  `json:"name"`
				Launches int64   `json:"launches"`
				Ms       float64 `json:"ms"`
			} `json:"kernels"`
			Counts struct {
				Launches      int64 `json:"launches"`
				GEMMs         int64 `json:"gemms"`
				Memsets       int64 `json:"memsets"`
				GraphLaunches int64 `json:"graph_launches"`
				HtoD          int64 `json:"htod_copies"`
				DtoH          int64 `json:"dtoh_copies"`
			} `json:"counts"`
		} `json:"profile"`
	}
	js := run(true)
	if err := json.Unmarshal([]byte(js), &res); err != nil {
		t.Fatalf("%v in %s", err, js)
	}
	if len(res.Profile) != 4 {
		t.Fatalf("%d phases in the JSON profile, want 4: %s", len(res.Profile), js)
	}
	for _, p := range res.Profile {
		var sum int64
		for _, k := range p.Kernels {
			if k.Name != "copy DtoD" {
				sum += k.Launches
			}
		}
		c := p.Counts
		if want := c.Launches + c.GEMMs + c.Memsets + c.GraphLaunches + c.HtoD + c.DtoH; sum != want || !(p.WallMs >= p.SpanMs) || p.SpanMs <= 0 {
			t.Errorf("%s: entries' launches %d, counts' %d; wall %v ms, span %v ms", p.Phase, sum, want, p.WallMs, p.SpanMs)
		}
	}
}

// TestProfileSummaryLine: scripts/profile-summary.sh, which writes the GPU
// check's profile line, reads a real --profile --json output (emu): the
// train micro-batch first with its top entries (the JSON's largest
// first), the rest summed as "(N more)", then the op-by-op decode step's,
// then the graph replay's and the prefill's totals; and it fails, saying
// so, on output without a profile.
func TestProfileSummaryLine(t *testing.T) {
	const shape = "test-profile-line"
	model.Shapes[shape] = tinyStepShape
	defer delete(model.Shapes, shape)
	var buf bytes.Buffer
	old := stdout
	stdout = &buf
	err := runBench(benchOpts{shape: shape, device: "emu", dtype: "auto", json: true, Options: bench.Options{Prefill: 4, Decode: 2, Batch: 2, Repeat: 1,
		PrefillChunk: 64, Temperature: 1, TrainSeqs: 1, TrainLen: 8, LoRARank: 4, NoMatmul: true, Profile: true}})
	stdout = old
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Profile []bench.PhaseProfile `json:"profile"`
	}
	if err := json.Unmarshal(buf.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "profile.out")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "../../scripts/profile-summary.sh", file, "3").Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	line := strings.TrimSpace(string(out))
	t.Logf("%d characters: %s", len(line), line)
	parts := strings.Split(line, " | ")
	if len(parts) != 4 {
		t.Fatalf("%d phases in %q, want 4", len(parts), line)
	}
	byPhase := map[string]bench.PhaseProfile{}
	for _, p := range res.Profile {
		byPhase[p.Phase] = p
	}
	for i, name := range []string{"train micro-batch 1x8", "decode step batch 2 (op by op)", "prefill 2x4", "decode step batch 2 (graph replay)"} {
		p := byPhase[name]
		j := slices.IndexFunc(parts, func(s string) bool { return strings.HasPrefix(s, name+": wall ") })
		if j < 0 || (i < 2 && j != i) {
			t.Errorf("phase %q at %d in %q", name, j, line)
			continue
		}
		want := fmt.Sprintf("wall %.4g ms, kernels %.4g (%.0f%%), idle %.3g", p.WallMs, p.KernelMs, 100*p.KernelMs/p.WallMs, p.SpanMs-p.KernelMs)
		if !strings.Contains(parts[j], want) {
			t.Errorf("%s: %q lacks %q", name, parts[j], want)
		}
		if i < 2 {
			k := p.Kernels[0]
			top := fmt.Sprintf(": %s %.3g %.0f%%; ", k.Name, k.Ms, 100*k.Ms/p.WallMs)
			more := fmt.Sprintf("; (%d more) ", len(p.Kernels)-3)
			if !strings.Contains(parts[j], top) || !strings.Contains(parts[j], more) || strings.Count(parts[j], "; ") != 3 {
				t.Errorf("%s: %q: want %q first, 3 entries and %q", name, parts[j], top, more)
			}
		}
	}
	if err := os.WriteFile(file, []byte(`{"results":[{"name":"x","value":1,"unit":"tok/s"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "../../scripts/profile-summary.sh", file).Output(); err == nil || !strings.Contains(string(out), "no profile") {
		t.Errorf("output without a profile: %v, %q", err, out)
	}
}
