package pybridge

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/chat"
)

// stubPython returns python3 with the verifiers stand-in of testdata on
// its path; the tests skip only where the machine has no python3.
func stubPython(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH: the bridge runs environments in python")
	}
	stub, _ := filepath.Abs("testdata/vfstub")
	t.Setenv("PYTHONPATH", stub)
	t.Setenv("GRPO_PYTHON", "")
	return py
}

// logLines collects the child's stderr lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }
func (l *logLines) all() string  { l.mu.Lock(); defer l.mu.Unlock(); return strings.Join(l.lines, "\n") }

// has waits a little for s to be logged: stderr is read on its own
// goroutine, so a line may arrive just after the response it preceded.
func (l *logLines) has(s string) bool {
	for range 100 {
		if strings.Contains(l.all(), s) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func startEnv(t *testing.T, module string, args map[string]any, opts Options) (*Bridge, *logLines) {
	t.Helper()
	opts.Python = stubPython(t)
	logs := &logLines{}
	opts.Log = logs.add
	dir, _ := filepath.Abs("testdata/envs")
	b, err := Start(context.Background(), Target{ID: "test/" + module, Module: module, ModuleDir: dir, Args: args}, opts)
	if err != nil {
		t.Fatalf("Start: %v\nstderr:\n%s", err, logs.all())
	}
	t.Cleanup(func() { b.Close() })
	return b, logs
}

func TestHelloAndRows(t *testing.T) {
	b, _ := startEnv(t, "guess_number", map[string]any{"max_turns": 3}, Options{})
	h := b.Hello()
	if h.EnvClass != "GuessEnv" || !h.MultiTurn || h.MaxTurns != 3 || h.SystemPrompt != "Answer with one digit." {
		t.Errorf("hello = %+v", h)
	}
	if h.Splits["train"] != 3 || h.Splits["eval"] != 1 {
		t.Errorf("splits = %v, want train 3 eval 1", h.Splits)
	}
	rows, err := b.Rows(context.Background(), "train")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	r := rows[2]
	want := []chat.Message{{Role: "system", Content: "Answer with one digit."}, {Role: "user", Content: "Guess a number from 1 to 9."}}
	if !reflect.DeepEqual(r.Prompt, want) {
		t.Errorf("prompt = %+v", r.Prompt)
	}
	if r.Answer != "7" || r.Info["level"] != float64(2) || r.ExampleID != float64(2) || r.Task != "default" {
		t.Errorf("row = %+v", r)
	}
}

func TestRowsPaging(t *testing.T) {
	b, _ := startEnv(t, "guess_number", nil, Options{})
	var page rowsResult
	if err := b.call(context.Background(), request{Op: "rows", Split: "train", Offset: 1, Limit: 1}, &page); err != nil {
		t.Fatal(err)
	}
	if page.Total != 3 || len(page.Rows) != 1 || page.Rows[0].ExampleID != float64(1) {
		t.Errorf("page = %+v", page)
	}
}

func TestNoEvalSplit(t *testing.T) {
	b, _ := startEnv(t, "guess_number", map[string]any{"with_eval": false}, Options{})
	if _, ok := b.Hello().Splits["eval"]; ok {
		t.Errorf("splits = %v, want no eval", b.Hello().Splits)
	}
	_, err := b.Rows(context.Background(), "eval")
	var ce *ChildError
	if !errors.As(err, &ce) || ce.Kind != KindNoSplit {
		t.Errorf("eval rows: %v, want a %s error", err, KindNoSplit)
	}
}

// A two-turn episode: a wrong guess gets a hint, the right one ends the
// game; the rubric sees the episode's State (its guesses) and the text.
func TestTwoTurnEpisodeAndScore(t *testing.T) {
	b, _ := startEnv(t, "guess_number", map[string]any{"max_turns": 3}, Options{})
	ctx := context.Background()
	rows, err := b.Rows(ctx, "train")
	if err != nil {
		t.Fatal(err)
	}
	row := rows[0]
	conv := append([]chat.Message(nil), row.Prompt...)
	conv = append(conv, chat.Message{Role: "assistant", Content: "3"})
	r1, err := b.Reply(ctx, "ep1", &row, conv)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Done || len(r1.Messages) != 1 || !reflect.DeepEqual(r1.Messages[0], chat.Message{Role: "user", Content: "higher"}) {
		t.Fatalf("turn 1 reply = %+v", r1)
	}
	conv = append(conv, r1.Messages...)
	conv = append(conv, chat.Message{Role: "assistant", Content: "7"})
	r2, err := b.Reply(ctx, "ep1", nil, conv)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Done || r2.Stop != "has_final_env_response" || len(r2.Messages) != 1 || r2.Messages[0].Content != "correct" {
		t.Fatalf("turn 2 reply = %+v", r2)
	}
	s, err := b.Score(ctx, "ep1", row, conv[len(row.Prompt):])
	if err != nil {
		t.Fatal(err)
	}
	if s.Reward != 1 || s.Metrics["correct"] != 1 || s.Metrics["guesses"] != 2 {
		t.Errorf("score = %+v, want reward 1, correct 1, guesses 2", s)
	}
	// The state went with the score: the episode is unknown now.
	if _, err := b.Reply(ctx, "ep1", nil, conv); !isKind(err, KindUnknownEpisode) {
		t.Errorf("reply after score: %v, want %s", err, KindUnknownEpisode)
	}
}

func TestMaxTurnsEndsEpisode(t *testing.T) {
	b, _ := startEnv(t, "guess_number", map[string]any{"max_turns": 1}, Options{})
	rows, _ := b.Rows(context.Background(), "train")
	conv := append(append([]chat.Message(nil), rows[0].Prompt...), chat.Message{Role: "assistant", Content: "1"})
	r, err := b.Reply(context.Background(), "e", &rows[0], conv)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Done || r.Stop != "max_turns_reached" || len(r.Messages) != 0 {
		t.Errorf("reply = %+v, want done by max_turns_reached", r)
	}
}

// A rollout the child never saw is scored from its row, with its model
// turns replayed into a fresh State.
func TestScoreWithoutEpisode(t *testing.T) {
	b, _ := startEnv(t, "guess_number", nil, Options{})
	row := Row{Prompt: []chat.Message{{Role: "user", Content: "Guess."}}, Answer: "7"}
	s, err := b.Score(context.Background(), "", row, []chat.Message{{Role: "assistant", Content: "7"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Reward != 1 || s.Metrics["correct"] != 1 || s.Metrics["guesses"] != 0 {
		t.Errorf("score = %+v", s)
	}
	s, err = b.Score(context.Background(), "", row, []chat.Message{{Role: "assistant", Content: "5"}})
	if err != nil || s.Reward != 0 {
		t.Errorf("wrong answer: %+v, %v", s, err)
	}
}

func TestEnvErrors(t *testing.T) {
	b, logs := startEnv(t, "trouble", nil, Options{})
	ctx := context.Background()
	rows, _ := b.Rows(ctx, "train")
	say := func(ep, text string) (Reply, error) {
		conv := append(append([]chat.Message(nil), rows[0].Prompt...), chat.Message{Role: "assistant", Content: text})
		return b.Reply(ctx, ep, &rows[0], conv)
	}
	// A Python exception fails the request with its type, message and place.
	_, err := say("a", "raise")
	if err == nil || !strings.Contains(err.Error(), "KeyError: 'no such board' (at trouble.py:") {
		t.Errorf("raise: %v", err)
	}
	if !logs.has("env test/trouble: Traceback") {
		t.Errorf("the traceback was not logged with the env's prefix:\n%s", logs.all())
	}
	// verifiers' own Error ends the episode as verifiers does.
	r, err := say("b", "vf-error")
	if err != nil || !r.Done || r.Stop != "has_error" {
		t.Errorf("vf.Error: %+v, %v", r, err)
	}
	// The child is still serving.
	if r, err := say("c", "hello"); err != nil || r.Done || r.Messages[0].Content != "again" {
		t.Errorf("after errors: %+v, %v", r, err)
	}
}

// A crashing child fails its request with one line naming the env and
// its last stderr line; the next request gets a new child; after
// MaxCrashes deaths every request fails with ErrGaveUp.
func TestCrashRestartsThenGivesUp(t *testing.T) {
	b, logs := startEnv(t, "trouble", nil, Options{MaxCrashes: 2})
	ctx := context.Background()
	rows, _ := b.Rows(ctx, "train")
	conv := func(text string) []chat.Message {
		return append(append([]chat.Message(nil), rows[0].Prompt...), chat.Message{Role: "assistant", Content: text})
	}
	_, err := b.Reply(ctx, "a", &rows[0], conv("crash"))
	if err == nil || !strings.Contains(err.Error(), "env test/trouble: reply failed: the python child exited (exit status 7); its last stderr line: ZeroDivisionError: the env fell over") {
		t.Fatalf("crash: %v", err)
	}
	if !logs.has("env test/trouble: about to crash") {
		t.Errorf("print() output did not reach the log:\n%s", logs.all())
	}
	if r, err := b.Reply(ctx, "b", &rows[0], conv("hi")); err != nil || r.Messages[0].Content != "again" {
		t.Fatalf("after one crash: %+v, %v", r, err)
	}
	_, err = b.Reply(ctx, "c", &rows[0], conv("crash"))
	if err == nil {
		t.Fatal("second crash: no error")
	}
	_, err = b.Reply(ctx, "d", &rows[0], conv("hi"))
	if !errors.Is(err, ErrGaveUp) || !strings.Contains(err.Error(), "died 2 times") {
		t.Errorf("after MaxCrashes: %v, want ErrGaveUp", err)
	}
}

// A hanging environment never hangs grpo: the request times out, the
// child is stopped, and the next request gets a new one.
func TestHangTimesOut(t *testing.T) {
	b, _ := startEnv(t, "trouble", nil, Options{Timeout: 500 * time.Millisecond})
	ctx := context.Background()
	rows, _ := b.Rows(ctx, "train")
	conv := append(append([]chat.Message(nil), rows[0].Prompt...), chat.Message{Role: "assistant", Content: "hang"})
	start := time.Now()
	_, err := b.Reply(ctx, "a", &rows[0], conv)
	if err == nil || !strings.Contains(err.Error(), "env test/trouble: reply timed out after 500ms") {
		t.Fatalf("hang: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the timeout took %v", d)
	}
	conv[len(conv)-1].Content = "hi"
	if r, err := b.Reply(ctx, "b", &rows[0], conv); err != nil || r.Messages[0].Content != "again" {
		t.Errorf("after the timeout: %+v, %v", r, err)
	}
}

// Requests from many goroutines share the child and each gets its own
// answer back.
func TestConcurrentEpisodes(t *testing.T) {
	b, _ := startEnv(t, "guess_number", map[string]any{"max_turns": 3}, Options{})
	ctx := context.Background()
	rows, _ := b.Rows(ctx, "train")
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			guess := []string{"1", "9"}[i%2]
			conv := append(append([]chat.Message(nil), rows[0].Prompt...), chat.Message{Role: "assistant", Content: guess})
			r, err := b.Reply(ctx, "ep"+guess+string(rune('a'+i)), &rows[0], conv)
			want := map[string]string{"1": "higher", "9": "lower"}[guess]
			if err == nil && (len(r.Messages) != 1 || r.Messages[0].Content != want) {
				err = errors.New("guess " + guess + ": got " + r.Messages[0].Content)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestMissingVerifiers(t *testing.T) {
	py := stubPython(t)
	t.Setenv("PYTHONPATH", t.TempDir())
	_, err := Start(context.Background(), Target{ID: "owner/name"}, Options{Python: py, Log: func(string) {}})
	want := "env owner/name: " + py + " cannot import verifiers; install it with `" + py + " -m pip install verifiers`"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %v\nwant one line starting %q", err, want)
	}
}

func TestMissingPython(t *testing.T) {
	t.Setenv("GRPO_PYTHON", "/nonexistent/python")
	_, err := Start(context.Background(), Target{ID: "owner/name"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "env owner/name: GRPO_PYTHON=/nonexistent/python is not an executable python") {
		t.Errorf("got %v", err)
	}
	t.Setenv("GRPO_PYTHON", "")
	t.Setenv("PATH", t.TempDir())
	_, err = Start(context.Background(), Target{ID: "owner/name"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "no python3 on PATH: install Python 3.10 or newer") {
		t.Errorf("no python3: %v", err)
	}
}

func TestLoadFailure(t *testing.T) {
	py := stubPython(t)
	_, err := Start(context.Background(), Target{ID: "owner/missing-env"}, Options{Python: py, Log: func(string) {}})
	if err == nil || !strings.Contains(err.Error(), "env owner/missing-env: hello: Could not import 'owner/missing-env' environment") {
		t.Errorf("missing module: %v", err)
	}
	dir, _ := filepath.Abs("testdata/envs")
	_, err = Start(context.Background(), Target{ID: "g", Module: "guess_number", ModuleDir: dir, Args: map[string]any{"nope": 1}},
		Options{Python: py, Log: func(string) {}})
	if err == nil || !strings.Contains(err.Error(), "unexpected keyword argument 'nope'") {
		t.Errorf("bad arg: %v", err)
	}
}

func isKind(err error, kind string) bool {
	var ce *ChildError
	return errors.As(err, &ce) && ce.Kind == kind
}
