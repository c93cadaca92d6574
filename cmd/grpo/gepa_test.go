package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/endpoints"
	"github.com/grpo-dev/grpo/examples"
	"github.com/grpo-dev/grpo/gepa"
)

// scriptedLab is an OpenAI-compatible server playing a scripted student
// and teacher. The student, under the system prompt "Level k", reverses a
// text correctly when k reaches its difficulty (its length mod 3, plus 1)
// and answers "wrong" otherwise; any other prompt is level 0, so "Level 3"
// is the known best prompt. The teacher improves the instruction it is
// shown by one level only when the traces hold a failure (a reward below
// 1); shown none, it hands the instruction back unchanged.
type scriptedLab struct {
	mu            sync.Mutex
	studentCalls  int
	teacherCalls  int
	blockAt       int // the teacher call (1-based) that never answers; 0: none
	blocked       chan struct{}
	blockedClosed bool
	// studentMaxTokens is each student request's max_tokens (0: none).
	studentMaxTokens []int
}

var rewardRE = regexp.MustCompile(`reward ([0-9.]+)`)

func (l *scriptedLab) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req endpoints.ChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var reply string
	switch req.Model {
	case "student":
		l.mu.Lock()
		l.studentCalls++
		if req.MaxTokens != nil {
			l.studentMaxTokens = append(l.studentMaxTokens, *req.MaxTokens)
		} else {
			l.studentMaxTokens = append(l.studentMaxTokens, 0)
		}
		l.mu.Unlock()
		level := 0
		fmt.Sscanf(req.Messages[0].Content, "Level %d", &level)
		text := req.Messages[len(req.Messages)-1].Content
		if req.Messages[0].Role == "system" && level >= len(text)%3+1 {
			reply = "<reversed_text>" + reverseString(text) + "</reversed_text>"
		} else {
			reply = "<reversed_text>wrong</reversed_text>"
		}
	case "teacher":
		l.mu.Lock()
		l.teacherCalls++
		n := l.teacherCalls
		l.mu.Unlock()
		if n == l.blockAt {
			l.mu.Lock()
			if !l.blockedClosed {
				close(l.blocked)
				l.blockedClosed = true
			}
			l.mu.Unlock()
			<-r.Context().Done()
			return
		}
		prompt := req.Messages[0].Content
		_, rest, _ := strings.Cut(prompt, "```\n")
		cur, _, _ := strings.Cut(rest, "\n```")
		failed := false
		for _, m := range rewardRE.FindAllStringSubmatch(prompt, -1) {
			if v, _ := strconv.ParseFloat(m[1], 64); v < 0.999 {
				failed = true
			}
		}
		level := 0
		fmt.Sscanf(cur, "Level %d", &level)
		if failed {
			reply = fmt.Sprintf("Some answers are wrong; try:\n```\nLevel %d\n```", level+1)
		} else {
			reply = "```\n" + cur + "\n```"
		}
	default:
		http.Error(w, "unknown model "+req.Model, 404)
		return
	}
	json.NewEncoder(w).Encode(endpoints.ChatResponse{ID: "x", Object: "chat.completion", Model: req.Model,
		Choices: []endpoints.ChatChoice{{Message: endpoints.ChatMessage{Role: "assistant", Content: &reply}, FinishReason: "stop"}}})
}

func reverseString(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// gepaLabConfig writes endpoints.toml (student and teacher on url) and a
// GEPA config of reverse-text (synthetic, 9 train and 6 eval examples: the train set holds every difficulty).
func gepaLabConfig(t *testing.T, url string) string {
	t.Helper()
	dir := t.TempDir()
	reg := "[[endpoint]]\nendpoint_id = \"student\"\nmodel = \"student\"\nurl = \"" + url + "/v1\"\nkey = \"\"\n\n" +
		"[[endpoint]]\nendpoint_id = \"teacher\"\nmodel = \"teacher\"\nurl = \"" + url + "/v1\"\nkey = \"\"\n"
	if err := os.WriteFile(filepath.Join(dir, "endpoints.toml"), []byte(reg), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "levels.toml")
	text := `model = "student"
reflection_model = "teacher"
endpoints_path = "endpoints.toml"

[env]
env_id = "reverse-text"
env_args = { dataset_name = "synthetic", num_train_examples = 9, num_eval_examples = 6 }

[gepa]
max_calls = 120
num_train = 9
num_val = 6
minibatch_size = 2
max_concurrent = 4
seed = 5
`
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestGEPARunFindsKnownBest is the Bar: with the scripted teacher that
// improves the prompt only when shown failures, grpo gepa run finds
// "Level 3" within its budget, writes the output files, and counts as its
// calls exactly the student rollouts the server played.
func TestGEPARunFindsKnownBest(t *testing.T) {
	lab := &scriptedLab{}
	hs := httptest.NewServer(lab)
	defer hs.Close()
	cfg := gepaLabConfig(t, hs.URL)
	out := filepath.Join(t.TempDir(), "run")
	var code int
	var stdout, stderr string
	errText := withOSStderr(t, func() { code, stdout, stderr = runCLI("gepa", "run", cfg, "--output", out) })
	if code != 0 {
		t.Fatalf("exit %d: %s%s\n%s", code, stderr, errText, stdout)
	}
	if got, _ := os.ReadFile(filepath.Join(out, gepa.PromptFile)); string(got) != "Level 3" {
		t.Fatalf("system_prompt.txt %q, want the known best \"Level 3\"\n%s", got, stdout)
	}
	for _, f := range []string{gepa.ResultsFile, gepa.FrontierFile, gepa.MetadataFile, gepa.PlotFile, "config.toml", "log.txt"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	var meta struct {
		Calls     int     `json:"calls"`
		BestScore float64 `json:"best_score"`
	}
	data, _ := os.ReadFile(filepath.Join(out, gepa.MetadataFile))
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Calls != lab.studentCalls || meta.Calls > 120 || meta.BestScore != 1 {
		t.Errorf("metadata calls %d, the server played %d (budget 120); best %.3f", meta.Calls, lab.studentCalls, meta.BestScore)
	}
	if !strings.Contains(stdout, "best prompt: #3, validation 1.0000") || !strings.Contains(errText, "gepa iteration 0: seed prompt validated") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, errText)
	}
	// grpo runs list reports it finished (its result is the prompt, not an
	// adapter).
	if code, list, _ := runCLI("runs", "list", "--dir", filepath.Dir(out)); code != 0 || !strings.Contains(list, "finished") {
		t.Errorf("runs list: exit %d\n%s", code, list)
	}
	// Run again: it resumes the finished run, and the spent budget ends it
	// at once.
	before := lab.studentCalls
	withOSStderr(t, func() { code, stdout, stderr = runCLI("gepa", "run", cfg, "--output", out) })
	if code != 0 || lab.studentCalls != before {
		t.Errorf("rerun of a finished run: exit %d, %d more calls: %s", code, lab.studentCalls-before, stderr)
	}
}

// TestGEPARunKilledResumes is the Bar's second half: a grpo gepa run
// killed (SIGKILL) while it waits on the teacher mid-iteration, then run
// again, resumes from its last saved iteration and ends with the files an
// uninterrupted run writes.
func TestGEPARunKilledResumes(t *testing.T) {
	whole := &scriptedLab{}
	hs := httptest.NewServer(whole)
	defer hs.Close()
	cfg := gepaLabConfig(t, hs.URL)
	ref := filepath.Join(t.TempDir(), "ref")
	if code, _, stderr := runCLIQuiet(t, "gepa", "run", cfg, "--output", ref, "--quiet"); code != 0 {
		t.Fatalf("reference run: exit %d: %s", code, stderr)
	}

	lab := &scriptedLab{blockAt: 3, blocked: make(chan struct{})}
	hs2 := httptest.NewServer(lab)
	defer hs2.Close()
	cfg2 := gepaLabConfig(t, hs2.URL)
	out := filepath.Join(t.TempDir(), "run")
	child, stderr := grpoChild("gepa", "run", cfg2, "--output", out, "--quiet")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lab.blocked:
	case <-time.After(2 * time.Minute):
		child.Process.Kill()
		t.Fatalf("the run never reached its third reflection: %s", stderr)
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	state, err := os.ReadFile(filepath.Join(out, gepa.StateFile))
	if err != nil {
		t.Fatalf("no state after the kill: %v\n%s", err, stderr)
	}
	var st struct{ Iteration int }
	json.Unmarshal(state, &st)
	if st.Iteration < 1 {
		t.Fatalf("state at iteration %d", st.Iteration)
	}
	lab.mu.Lock()
	lab.blockAt = 0
	lab.mu.Unlock()
	code, stdout, errText := runCLIQuiet(t, "gepa", "run", cfg2, "--output", out, "--quiet")
	if code != 0 {
		t.Fatalf("resumed run: exit %d: %s", code, errText)
	}
	log, _ := os.ReadFile(filepath.Join(out, "log.txt"))
	if !strings.Contains(string(log), fmt.Sprintf("resumed at iteration %d", st.Iteration)) {
		t.Errorf("log.txt does not say the run resumed at iteration %d:\n%s", st.Iteration, log)
	}
	for _, f := range []string{gepa.ResultsFile, gepa.FrontierFile, gepa.PromptFile} {
		a, _ := os.ReadFile(filepath.Join(ref, f))
		b, _ := os.ReadFile(filepath.Join(out, f))
		if !bytes.Equal(a, b) || len(a) == 0 {
			t.Errorf("%s of the killed-and-resumed run differs from the uninterrupted run's:\n%s\nvs\n%s", f, b, a)
		}
	}
	if !strings.Contains(stdout, "best prompt: #3") {
		t.Errorf("stdout: %s", stdout)
	}
}

// runCLIQuiet is runCLI with the process's stderr captured too.
func runCLIQuiet(t *testing.T, args ...string) (int, string, string) {
	var code int
	var stdout, stderr string
	osErr := withOSStderr(t, func() { code, stdout, stderr = runCLI(args...) })
	return code, stdout, stderr + osErr
}

// TestGEPARunUsage: bad calls and configs get one clear line.
func TestGEPARunUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"gepa"}, "the subcommand is run"},
		{[]string{"gepa", "run"}, "give one GEPA config file"},
		{[]string{"gepa", "run", "x.toml", "--max-calls", "-3"}, "--max-calls -3"},
		{[]string{"gepa", "run", "no-such.toml"}, "reading config"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, stderr, c.want)
		}
	}
}

// TestGEPARunLabLayout: Lab's current GEPA layout ([[env]] env_id, [gepa]
// max_concurrent, [sampling]) runs: grpo init's llama-3.toml, its models
// swapped for the scripted endpoints and its budget cut to the synthetic
// data, optimises, and the student is sampled with the file's [sampling]
// max_tokens.
func TestGEPARunLabLayout(t *testing.T) {
	lab := &scriptedLab{}
	hs := httptest.NewServer(lab)
	defer hs.Close()
	dir := filepath.Dir(gepaLabConfig(t, hs.URL)) // for its endpoints.toml
	text, err := fs.ReadFile(examples.Workspace(), "configs/gepa/llama-3.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(text)
	for _, r := range [][2]string{
		{"model = \"meta-llama/Llama-3.2-1B-Instruct\"\nreflection_model = \"meta-llama/Llama-3.2-1B-Instruct\"\n",
			"model = \"student\"\nreflection_model = \"teacher\"\nendpoints_path = \"endpoints.toml\"\n"},
		{"[[env]]\nenv_id = \"primeintellect/reverse-text\"\n",
			"[[env]]\nenv_id = \"primeintellect/reverse-text\"\nenv_args = { dataset_name = \"synthetic\", num_train_examples = 9, num_eval_examples = 6 }\n"},
		{"num_train = 100\nnum_val = 50\n", "num_train = 9\nnum_val = 6\n"},
	} {
		if !strings.Contains(cfg, r[0]) {
			t.Fatalf("llama-3.toml lacks %q", r[0])
		}
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	path := filepath.Join(dir, "llama-3.toml")
	os.WriteFile(path, []byte(cfg), 0o644)
	out := filepath.Join(t.TempDir(), "run")
	var code int
	var stdout, stderr string
	errText := withOSStderr(t, func() {
		code, stdout, stderr = runCLI("gepa", "run", path, "--output", out, "--max-calls", "60", "--quiet")
	})
	if code != 0 {
		t.Fatalf("exit %d: %s%s\n%s", code, stderr, errText, stdout)
	}
	if got, err := os.ReadFile(filepath.Join(out, gepa.PromptFile)); err != nil || len(got) == 0 {
		t.Errorf("system_prompt.txt %q: %v", got, err)
	}
	if len(lab.studentMaxTokens) == 0 {
		t.Fatal("no student calls")
	}
	for _, n := range lab.studentMaxTokens {
		if n != 1024 {
			t.Fatalf("a student request's max_tokens = %d, want [sampling] max_tokens = 1024", n)
		}
	}
}
