package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestTrainOnGrpoServeMatchesInProcess is issue 17's bar: a 5-step run
// whose [inference] points at `grpo serve` in another process — each
// step's adapter written to the run directory and hot-loaded as step-N,
// every turn a completions request on token ids with a per-rollout seed,
// the server's log-probs the behaviour log-probs — logs the same metrics
// as the same run generating in-process: every count, reward and
// advantage exactly, the log-prob-derived figures (loss, KL, entropy,
// clip ratios, grad norm) within 1e-5; wall-clock fields aside. The
// server has fewer slots than a step has rollouts, so its batches differ
// from the trainer's. The periodic eval goes through the server too.
func TestTrainOnGrpoServeMatchesInProcess(t *testing.T) {
	cfg := tinyTrainConfig(t, 5, 0, "")
	model := filepath.Join(filepath.Dir(cfg), "model")
	// Longer completions, larger groups and a high learning rate, so that
	// every step trains and each step's adapter changes what is sampled.
	// Not higher: the server batches requests as they arrive, so its
	// log-probs differ from the trainer's in the last bits, and AdamW
	// carries that into later steps in proportion to the rate. Measured
	// under a loaded machine, the step-5 grad_norm gap was up to 1.2e-5 at
	// 0.05 (past the bar's 1e-5; one CI failure) and up to 1.15e-6 at 0.02.
	text := fmt.Sprintf(`model = %q
max_steps = 5
batch_size = 8
rollouts_per_example = 4
seed = 3
learning_rate = 0.02
[sampling]
max_tokens = 12
[[env]]
id = %q
[lora]
rank = 2
alpha = 4
[eval]
interval = 2
num_examples = 3
rollouts_per_example = 2
`, model, filepath.Join(filepath.Dir(cfg), "env"))
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	url, srvErr := startServe(t, model, "--slots", "3", "--max-len", "512", "--served-model-name", "tiny")

	local := filepath.Join(t.TempDir(), "local")
	if code, _, stderr := runCLI("train", cfg, "--output", local); code != 0 {
		t.Fatalf("in-process run: exit %d: %s", code, stderr)
	}
	remoteCfg := filepath.Join(filepath.Dir(cfg), "remote.toml")
	text += fmt.Sprintf("\n[inference]\nurl = %q\nmodel = \"tiny\"\ntimeout = 60\n", url)
	if err := os.WriteFile(remoteCfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	remote := filepath.Join(t.TempDir(), "remote")
	if code, _, stderr := runCLI("train", remoteCfg, "--output", remote); code != 0 {
		t.Fatalf("run on grpo serve: exit %d: %s\nserver: %s", code, stderr, srvErr)
	}

	for _, file := range []string{"metrics.jsonl", "eval.jsonl"} {
		l, r := readJSONL(t, filepath.Join(local, file)), readJSONL(t, filepath.Join(remote, file))
		if len(l) != len(r) || len(l) == 0 {
			t.Fatalf("%s: %d rows in process, %d on the server", file, len(l), len(r))
		}
		for i := range l {
			compareRow(t, fmt.Sprintf("%s row %d", file, i+1), l[i], r[i])
		}
	}
	if len(readJSONL(t, filepath.Join(local, "eval.jsonl"))) != 3 {
		t.Errorf("eval.jsonl: want evals before step 1 and after steps 2 and 4")
	}
	log := srvErr.String()
	for step := 0; step <= 4; step++ {
		if !strings.Contains(log, fmt.Sprintf("loaded adapter step-%d from %s", step, filepath.Join(remote, "inference", fmt.Sprintf("step-%d", step)))) {
			t.Errorf("the server log lacks the load of step-%d:\n%s", step, log)
		}
	}
	if !strings.Contains(log, "unloaded adapter step-4") {
		t.Errorf("the run's last adapter was not unloaded at its end:\n%s", log)
	}
	if left, _ := os.ReadDir(filepath.Join(remote, "inference")); len(left) != 0 {
		t.Errorf("adapters left in the run's inference directory: %v", left)
	}
}

// serverURL reads the API root from grpo serve's first line.
func serverURL(t *testing.T, stdout interface{ Read([]byte) (int, error) }, stderr *bytes.Buffer) string {
	t.Helper()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line := <-lines:
		m := regexp.MustCompile(`on (http://\S+/v1) `).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("grpo serve printed %q; stderr: %s", line, stderr)
		}
		return m[1]
	case <-time.After(60 * time.Second):
		t.Fatalf("grpo serve did not start within a minute; stderr: %s", stderr)
	}
	return ""
}

func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rows = append(rows, row)
	}
	return rows
}

// logprobDerived are the metrics computed from log-probs (the server's
// as old log-probs, the trainer's own forward): equal to 1e-5, since a
// server prefills a later turn whole where the sampler continues it.
var logprobDerived = map[string]bool{"loss": true, "kl": true, "entropy": true, "grad_norm": true,
	"clip_ratio/low": true, "clip_ratio/high": true, "clip_ratio/region": true, "mismatch_kl": true}

func compareRow(t *testing.T, what string, l, r map[string]any) {
	t.Helper()
	var keys []string
	for k := range l {
		keys = append(keys, k)
	}
	for k := range r {
		if _, ok := l[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, "time/") || k == "tokens_per_s" {
			continue // wall clock
		}
		if k == "sampler/kept" {
			continue // only an in-process run has a sampler to keep
		}
		if k == "rollouts/overlapped_envs" {
			continue // chosen from the last step's wall clock, in process only; the rollouts are lock step's either way
		}
		lv, lok := l[k].(float64)
		rv, rok := r[k].(float64)
		switch {
		case !lok || !rok:
			if fmt.Sprint(l[k]) != fmt.Sprint(r[k]) {
				t.Errorf("%s: %s = %v in process, %v on the server", what, k, l[k], r[k])
			}
		case logprobDerived[k]:
			if math.Abs(lv-rv) > 1e-5 {
				t.Errorf("%s: %s = %v in process, %v on the server (differ by %g > 1e-5)", what, k, lv, rv, math.Abs(lv-rv))
			}
		case lv != rv:
			t.Errorf("%s: %s = %v in process, %v on the server", what, k, lv, rv)
		}
	}
}

// TestTrainInferenceErrors: --help documents [inference]; a server that is not up, and one that cannot
// load adapters at run time (vLLM without
// VLLM_ALLOW_RUNTIME_LORA_UPDATING answers 404), each end the run with
// one line naming the server and the fix, in seconds.
func TestTrainInferenceErrors(t *testing.T) {
	if code, out, _ := runCLI("train", "--help"); code != 0 || !strings.Contains(out, "[inference]") || !strings.Contains(out, "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True") {
		t.Errorf("train --help (exit %d) does not document [inference]", code)
	}
	cfg := tinyTrainConfig(t, 2, 0, "")
	base, _ := os.ReadFile(cfg)
	withURL := func(url string) string {
		p := filepath.Join(t.TempDir(), "run.toml")
		text := string(base) + fmt.Sprintf("\n[inference]\nurl = %q\nmodel = \"tiny\"\ntimeout = 5\n", url)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	down := closed.URL + "/v1"
	closed.Close()
	start := time.Now()
	code, _, stderr := runCLI("train", withURL(down), "--output", filepath.Join(t.TempDir(), "run"))
	line := strings.TrimSpace(stderr)
	if code != 1 || strings.Count(line, "\n") > 0 || !strings.Contains(line, `[inference] url = "`+down+`"`) ||
		!strings.Contains(line, down+"/models") || !strings.Contains(line, "start the server first (grpo serve") {
		t.Errorf("server down: exit %d: %s", code, stderr)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("server down: the run took %v to fail", d)
	}

	noLoRA := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object": "list", "data": [{"id": "tiny", "object": "model"}]}`)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"detail": "Not Found"}`)
	}))
	defer noLoRA.Close()
	code, _, stderr = runCLI("train", withURL(noLoRA.URL+"/v1"), "--output", filepath.Join(t.TempDir(), "run"))
	line = strings.TrimSpace(stderr)
	if code != 1 || strings.Count(line, "\n") > 0 || !strings.Contains(line, "loading adapter step-0 on the inference server") ||
		!strings.Contains(line, noLoRA.URL+"/v1/load_lora_adapter") || !strings.Contains(line, "HTTP 404") ||
		!strings.Contains(line, "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True") {
		t.Errorf("no runtime LoRA loading: exit %d: %s", code, stderr)
	}
}

// TestTrainAsyncOnGrpoServe is issue 29's bar for max_async_level = 1 on
// `grpo serve` in another process: the producer keeps the server busy
// while the trainer trains, so every step's rollouts are at most one
// policy step old (off_policy/age_max ≤ 1) and some are one step old
// (off_policy/age_mean > 0); the server never gets a request for an
// adapter it no longer holds (the run would fail), and the run leaves no
// adapter loaded or in its inference directory.
func TestTrainAsyncOnGrpoServe(t *testing.T) {
	cfg := tinyTrainConfig(t, 6, 0, "max_async_level = 1")
	model := filepath.Join(filepath.Dir(cfg), "model")
	url, srvErr := startServe(t, model, "--slots", "4", "--max-len", "512", "--served-model-name", "tiny")
	text, _ := os.ReadFile(cfg)
	text = fmt.Appendf(text, "\n[inference]\nurl = %q\nmodel = \"tiny\"\ntimeout = 60\n", url)
	if err := os.WriteFile(cfg, text, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := runCLI("train", cfg, "--output", out); code != 0 {
		t.Fatalf("run on grpo serve: exit %d: %s\nserver: %s", code, stderr, srvErr)
	}
	rows := readJSONL(t, filepath.Join(out, "metrics.jsonl"))
	if len(rows) != 6 {
		t.Fatalf("%d steps logged", len(rows))
	}
	aged := false
	for i, row := range rows {
		most, mean := row["off_policy/age_max"].(float64), row["off_policy/age_mean"].(float64)
		t.Logf("step %d: age_mean %.3f age_max %v dropped %v", i+1, mean, most, row["off_policy/dropped_rollouts"])
		if most > 1 {
			t.Errorf("step %d: off_policy/age_max = %v", i+1, most)
		}
		aged = aged || mean > 0
	}
	if !aged {
		t.Error("off_policy/age_mean is 0 every step: the producer never ran ahead of the trainer")
	}
	time.Sleep(100 * time.Millisecond) // the server logs the last unload after it answers
	if log := srvErr.String(); !strings.Contains(log, "unloaded adapter step-5") {
		t.Errorf("the run's last adapter was not unloaded at its end:\n%s", log)
	}
	if left, _ := os.ReadDir(filepath.Join(out, "inference")); len(left) != 0 {
		t.Errorf("adapters left in the run's inference directory: %v", left)
	}
}
