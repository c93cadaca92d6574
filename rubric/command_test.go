package rubric

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as a well-behaved reward program: run with
// GRPO_RUBRIC_HELPER=ratio it reads the request and replies with the difflib
// ratio of the last assistant message to the answer, like a Python reward
// function would.
func TestMain(m *testing.M) {
	if os.Getenv("GRPO_RUBRIC_HELPER") == "ratio" {
		var r Rollout
		if err := json.NewDecoder(os.Stdin).Decode(&r); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(2)
		}
		fmt.Printf(`{"reward": %v, "metrics": {"turns": %d, "info_x": %v}}`+"\n",
			Ratio(r.LastAssistant(), r.Answer), len(r.AssistantTurns()), r.Info["x"])
		os.Exit(0)
	}
	// Every process the tests start inherits the marker, so the process
	// table tells which of them outlived the tests.
	os.Setenv(testMarkerKey, fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()))
	code := m.Run()
	if left := leftoverProcesses(os.Getenv(testMarkerKey), 3*time.Second); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: processes started by the command-rubric tests are still running: %s\n", strings.Join(left, "; "))
		code = 1
	}
	os.Exit(code)
}

const testMarkerKey = "GRPO_RUBRIC_TEST_MARKER"

// script writes an executable /bin/sh script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "reward.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCommandRoundTrip(t *testing.T) {
	f, err := Command(CommandConfig{Argv: []string{os.Args[0]}, Env: []string{"GRPO_RUBRIC_HELPER=ratio"}})
	if err != nil {
		t.Fatal(err)
	}
	r := SingleTurn("reverse: abcd", "dcbx", "dcba")
	r.Info = map[string]any{"x": 3}
	s, err := f(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if s.Value != 0.75 || s.Metrics["turns"] != 1 || s.Metrics["info_x"] != 3 {
		t.Errorf("score %+v, want 0.75 with turns=1 info_x=3", s)
	}
}

func TestCommandBareNumberAndStdin(t *testing.T) {
	// The script replies 1 only if the request carried the answer.
	f, err := Command(CommandConfig{Argv: []string{script(t, `grep -q '"answer":"42"' && echo 1 || echo 0`)}})
	if err != nil {
		t.Fatal(err)
	}
	for answer, want := range map[string]float64{"42": 1, "7": 0} {
		s, err := f(t.Context(), SingleTurn("q", "c", answer))
		if err != nil || s.Value != want {
			t.Errorf("answer %s: score %v, %v; want %v", answer, s.Value, err, want)
		}
	}
}

func TestCommandFailures(t *testing.T) {
	cases := []struct {
		name, body string
		cfg        CommandConfig
		wantErr    string
	}{
		{"crash", `cat >/dev/null; echo 'Traceback (most recent call last):' >&2; echo 'ValueError: boom' >&2; exit 3`,
			CommandConfig{}, "exit status 3; stderr: ValueError: boom"},
		{"garbage", `cat >/dev/null; echo hello`, CommandConfig{}, `reply "hello" is not a finite number`},
		{"nan", `cat >/dev/null; echo nan`, CommandConfig{}, `reply "nan" is not a finite number`},
		{"no reward key", `cat >/dev/null; echo '{"score": 1}'`, CommandConfig{}, `unknown field "score"`},
		{"two objects", `cat >/dev/null; echo '{"reward": 1} {"reward": 2}'`, CommandConfig{}, "text after the JSON object"},
		{"empty", `cat >/dev/null`, CommandConfig{}, "empty reply"},
		{"hang", `sleep 30`, CommandConfig{Timeout: 200 * time.Millisecond}, "timed out after 200ms"},
		// The grandchild holds stdout open; only a group kill ends it.
		{"hang in background child", `sleep 30 & wait`, CommandConfig{Timeout: 200 * time.Millisecond}, "timed out after 200ms"},
		{"flood", `yes`, CommandConfig{MaxOutput: 1024}, "printed more than 1024 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Argv = []string{script(t, c.body)}
			f, err := Command(cfg)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			s, err := f(t.Context(), SingleTurn("q", "c", "a"))
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("took %v; the timeout or cap did not stop the program", took)
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("score %v, error %v; want error containing %q", s.Value, err, c.wantErr)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines", err)
			}
		})
	}
}

func TestCommandFailureIsCountedByRubric(t *testing.T) {
	f, err := Command(CommandConfig{Argv: []string{script(t, "exit 1")}})
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := Weighted(Term{Name: "ext", Weight: 1, Func: f})
	res := rb.Score(t.Context(), Rollout{})
	if res.Reward != 0 || res.Metrics["errors/ext"] != 1 || len(res.Errors) != 1 {
		t.Errorf("result %+v; want reward 0 and errors/ext = 1", res)
	}
}

func TestCommandConfigErrors(t *testing.T) {
	bad := map[string]CommandConfig{
		"no argv":     {},
		"missing":     {Argv: []string{"/nonexistent/reward.py"}},
		"neg timeout": {Argv: []string{"/bin/sh"}, Timeout: -1},
		"bad env":     {Argv: []string{"/bin/sh"}, Env: []string{"NOEQUALS"}},
	}
	for what, cfg := range bad {
		if _, err := Command(cfg); err == nil {
			t.Errorf("%s: Command accepted %+v", what, cfg)
		}
	}
}

func TestCommandRejectsUnencodableInfo(t *testing.T) {
	f, err := Command(CommandConfig{Argv: []string{script(t, "cat")}})
	if err != nil {
		t.Fatal(err)
	}
	r := Rollout{Info: map[string]any{"ch": make(chan int)}}
	if _, err := f(t.Context(), r); err == nil || !strings.Contains(err.Error(), "not JSON-encodable") {
		t.Errorf("error %v; want a JSON-encoding error", err)
	}
}

func TestCappedBuffer(t *testing.T) {
	c := &cappedBuffer{max: 4}
	if n, err := c.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatal(n, err)
	}
	if _, err := c.Write([]byte("de")); err == nil || !c.overflow || c.String() != "abcd" {
		t.Errorf("overflow write: err %v overflow %v buf %q", err, c.overflow, c.String())
	}
	tr := &cappedBuffer{max: 2, truncate: true}
	if n, err := io.WriteString(tr, "xyz"); n != 3 || err != nil || tr.String() != "xy" {
		t.Errorf("truncating write: %d %v %q", n, err, tr.String())
	}
}
