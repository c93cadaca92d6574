package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/rundir"
)

// scriptedServer is an OpenAI-compatible server for the tiny model whose
// completions are a function of the request alone — the prompt's ids, the
// seed, max_tokens and the adapter named — so that two runs requesting the
// same things get the same rollouts, whatever the order or concurrency of
// their requests. hold, when set, is asked of each completion request
// (with its adapter's name) and may block it.
type scriptedServer struct {
	*httptest.Server
	mu     sync.Mutex
	loaded map[string]bool
	bad    []string // completion requests naming an adapter not loaded
	hold   func(model string)
}

func newScriptedServer(t *testing.T) *scriptedServer {
	s := &scriptedServer{loaded: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model     string  `json:"model"`
			Prompt    []int32 `json:"prompt"`
			MaxTokens int     `json:"max_tokens"`
			Seed      int64   `json:"seed"`
			Stop      []int32 `json:"stop_token_ids"`
			LoRAName  string  `json:"lora_name"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"object": "list", "data": [{"id": "tiny"}]}`)
			return
		case "/v1/load_lora_adapter", "/v1/unload_lora_adapter":
			s.mu.Lock()
			s.loaded[req.LoRAName] = r.URL.Path == "/v1/load_lora_adapter"
			s.mu.Unlock()
			fmt.Fprint(w, `{}`)
			return
		}
		s.mu.Lock()
		if !s.loaded[req.Model] && req.Model != "tiny" {
			s.bad = append(s.bad, req.Model)
		}
		hold := s.hold
		s.mu.Unlock()
		if hold != nil {
			hold(req.Model)
		}
		h := fnv.New64a()
		fmt.Fprint(h, req.Model, req.Prompt, req.Seed, req.MaxTokens)
		x := h.Sum64()
		n := 1 + int(x%uint64(max(req.MaxTokens, 1)))
		ids, lps := make([]int32, n), make([]float64, n)
		for i := range ids {
			x = x*6364136223846793005 + 1442695040888963407
			ids[i], lps[i] = 3+int32(x>>33)%300, -0.5-float64(x>>60)/8
		}
		finish := "length"
		if n < req.MaxTokens && len(req.Stop) > 0 {
			ids[n-1], finish = req.Stop[0], "stop"
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []map[string]any{{"index": 0, "text": "", "finish_reason": finish,
			"token_ids": ids, "logprobs": map[string]any{"token_logprobs": lps}}}})
	}))
	t.Cleanup(s.Close)
	return s
}

// inferenceRun writes the resume fixture with [inference] on s and the
// extra top-level lines, and returns its config's path.
func inferenceRun(t *testing.T, s *scriptedServer, steps, ckInterval int, extra string) string {
	dir := t.TempDir()
	path := writeRunFixture(t, dir, steps, ckInterval)
	text, _ := os.ReadFile(path)
	text = append([]byte(extra+"\n"), text...)
	text = fmt.Appendf(text, "\n[inference]\nurl = %q\nmodel = \"tiny\"\ntimeout = 30\n", s.URL+"/v1")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// noProducerLeft fails when a producer goroutine outlived its run.
func noProducerLeft(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	if strings.Contains(string(buf), "rollout.(*Producer)") {
		t.Errorf("a producer goroutine outlived its run:\n%s", buf)
	}
}

// TestAsyncLevelZeroIsSynchronous: max_async_level = 0 with [inference]
// runs today's lock-step loop: metrics and the final adapter equal, bit
// for bit, those of the same run without the key, and no off_policy
// metric appears. The same run at max_async_level = 1 (the producer's
// per-group seeds and adapters) logs other rollouts, so the comparison
// would catch a k = 0 run taking the asynchronous path.
func TestAsyncLevelZeroIsSynchronous(t *testing.T) {
	s := newScriptedServer(t)
	runs := map[string][]map[string]any{}
	adapters := map[string]string{}
	for _, extra := range []string{"", "max_async_level = 0", "max_async_level = 1"} {
		res, err := runConfig(t, inferenceRun(t, s, 3, 0, extra), WithOutput(filepath.Join(t.TempDir(), "run")))
		if err != nil {
			t.Fatalf("%q: %v", extra, err)
		}
		runs[extra] = deterministicMetrics(t, res.RunDir)
		b, _ := os.ReadFile(filepath.Join(res.Adapter, "adapter_model.safetensors"))
		adapters[extra] = string(b)
	}
	want, got := runs[""], runs["max_async_level = 0"]
	if len(want) != 3 || !reflect.DeepEqual(got, want) {
		t.Errorf("max_async_level = 0 logged\n%v\nwithout it\n%v", got, want)
	}
	if adapters[""] == "" || adapters["max_async_level = 0"] != adapters[""] {
		t.Error("max_async_level = 0 trained another adapter")
	}
	for _, row := range got {
		for k := range row {
			if strings.HasPrefix(k, "off_policy/") {
				t.Errorf("max_async_level = 0 logged %s", k)
			}
		}
	}
	// Other seeds and adapters: some step's token count or reward differs
	// (one step's may agree by chance: a tiny model's rewards are often 0).
	async := runs["max_async_level = 1"]
	same := len(async) == len(want)
	for i := 0; same && i < len(async); i++ {
		same = reflect.DeepEqual(async[i]["tokens/total"], want[i]["tokens/total"]) && reflect.DeepEqual(async[i]["reward"], want[i]["reward"])
	}
	if len(async) != 3 || async[0]["off_policy/age_max"] == nil || same {
		t.Errorf("max_async_level = 1 logged the synchronous rollouts: %v", async)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bad) > 0 {
		t.Errorf("requests named adapters the server did not hold: %v", s.bad)
	}
	noProducerLeft(t)
}

// TestAsyncLevelOne: with max_async_level = 1 and a slow trainer (a step
// callback that sleeps), the producer runs ahead: each step's rollouts
// are at most one policy step old, some are one step old, and a group
// the server holds for long (its first request naming step-1's adapter)
// is dropped and counted once it is too old. No request names an
// adapter the server does not hold, every adapter is unloaded at the
// end, and no producer goroutine outlives the run.
func TestAsyncLevelOne(t *testing.T) {
	s := newScriptedServer(t)
	release := make(chan struct{})
	var once sync.Once
	s.hold = func(model string) {
		if model == "step-1" {
			held := false
			once.Do(func() { held = true })
			if held {
				<-release
			}
		}
	}
	t.Cleanup(func() { close(release) }) // before the server closes
	const steps = 6
	res, err := runConfig(t, inferenceRun(t, s, steps, 0, "max_async_level = 1"), WithOutput(filepath.Join(t.TempDir(), "run")),
		WithStepCallback(func(StepResult) { time.Sleep(150 * time.Millisecond) }))
	if err != nil {
		t.Fatal(err)
	}
	rows := deterministicMetrics(t, res.RunDir)
	if len(rows) != steps {
		t.Fatalf("%d steps logged", len(rows))
	}
	dropped, aged := 0.0, false
	for i, row := range rows {
		most, mean := row["off_policy/age_max"].(float64), row["off_policy/age_mean"].(float64)
		if most > 1 || mean < 0 || mean > most {
			t.Errorf("step %d: off_policy/age_max %v, age_mean %v", i+1, most, mean)
		}
		aged = aged || mean > 0
		dropped += row["off_policy/dropped_rollouts"].(float64)
		t.Logf("step %d: age_mean %.3f age_max %v dropped %v reward %.3f", i+1, mean, most, row["off_policy/dropped_rollouts"], row["reward"])
	}
	if !aged {
		t.Error("no step trained on a rollout of an older policy: the producer did not run ahead")
	}
	if dropped < 4 || int(dropped)%4 != 0 {
		t.Errorf("%v rollouts dropped; want the held group's 4 at least, in whole groups of 4", dropped)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bad) > 0 {
		t.Errorf("requests named adapters the server did not hold: %v", s.bad)
	}
	for name, on := range s.loaded {
		if on {
			t.Errorf("adapter %s still loaded after the run", name)
		}
	}
	noProducerLeft(t)
}

// TestAsyncInterruptAndResume: a run at max_async_level = 1 interrupted
// after step 3 stops its producer, checkpoints step 3 and resumes to the
// end; what was in flight is lost, nothing else (the resumed steps are
// logged once each, at most one step old).
func TestAsyncInterruptAndResume(t *testing.T) {
	s := newScriptedServer(t)
	path := inferenceRun(t, s, 6, 0, "max_async_level = 1")
	text, _ := os.ReadFile(path)
	cfg, err := config.Parse(text, path)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	_, err = New(cfg, WithOutput(out), WithConfigText(text), WithStepCallback(func(r StepResult) {
		if r.Step == 3 {
			cancel()
		}
	})).Run(ctx)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("want ErrInterrupted, got %v", err)
	}
	noProducerLeft(t)
	res, err := runConfig(t, path, WithResume(out))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := rundir.ReadJSONL(filepath.Join(out, "metrics.jsonl"))
	if err != nil || res.Steps != 6 || len(rows) != 6 {
		t.Fatalf("resumed to step %d with %d rows: %v", res.Steps, len(rows), err)
	}
	for i, row := range rows {
		if row["step"] != float64(i+1) || row["off_policy/age_max"].(float64) > 1 {
			t.Errorf("row %d: %v", i+1, row)
		}
	}
	noProducerLeft(t)
}

// TestAsyncKillAndResume: killed with SIGKILL and resumed, a run on an
// [inference] server at max_async_level = 0 ends with the metrics and
// adapter of the run never killed, bit for bit; at max_async_level = 1 it
// loses only what was in flight: it resumes to the end, each step logged
// once and at most one policy step old.
func TestAsyncKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three times")
	}
	s := newScriptedServer(t)
	const steps = 8
	cfg := inferenceRun(t, s, steps, 2, "max_async_level = 0")
	ref := filepath.Join(t.TempDir(), "uninterrupted")
	if _, err := runConfig(t, cfg, WithOutput(ref)); err != nil {
		t.Fatal(err)
	}
	killed := filepath.Join(t.TempDir(), "killed")
	killAndResume(t, cfg, killed, steps, 5)
	want, got := deterministicMetrics(t, ref), deterministicMetrics(t, killed)
	if len(want) != steps || !reflect.DeepEqual(got, want) {
		t.Errorf("max_async_level = 0: resumed run logged\n%v\nthe uninterrupted one\n%v", got, want)
	}
	a, _ := os.ReadFile(filepath.Join(ref, "adapter", "adapter_model.safetensors"))
	b, _ := os.ReadFile(filepath.Join(killed, "adapter", "adapter_model.safetensors"))
	if len(a) == 0 || string(a) != string(b) {
		t.Error("max_async_level = 0: the resumed run trained another adapter")
	}

	cfg = inferenceRun(t, s, steps, 2, "max_async_level = 1")
	killed = filepath.Join(t.TempDir(), "killed-async")
	killAndResume(t, cfg, killed, steps, 5)
	rows := deterministicMetrics(t, killed)
	if len(rows) != steps {
		t.Fatalf("max_async_level = 1: %d steps logged after the resume", len(rows))
	}
	for i, row := range rows {
		if row["step"] != float64(i+1) || row["off_policy/age_max"].(float64) > 1 {
			t.Errorf("max_async_level = 1: row %d after the resume: %v", i+1, row)
		}
	}
}
