package main

import (
	"bytes"
	"encoding/json"
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
