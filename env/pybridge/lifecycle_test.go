package pybridge

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/chat"
)

const markerEnv = "GRPO_TEST_MARKER"

// marked lists the processes whose environment or command line holds
// marker: everything a test's python child started inherits it.
func marked(marker string) []string {
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, _ := os.ReadFile(d + "/environ")
		cmd, _ := os.ReadFile(d + "/cmdline")
		if bytes.Contains(env, []byte(marker)) || bytes.Contains(cmd, []byte(marker)) {
			found = append(found, filepath.Base(d)+" "+string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
		}
	}
	return found
}

// gone waits for every marked process to end and reports the survivors.
func gone(t *testing.T, marker string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := marked(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of the run are left after %v:\n%s", len(left), within, strings.Join(left, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// say plays one assistant turn of a new episode on the first train row.
func say(t *testing.T, b *Bridge, text string) (Reply, error) {
	t.Helper()
	rows, err := b.Rows(context.Background(), "train")
	if err != nil {
		t.Fatal(err)
	}
	conv := append(append([]chat.Message(nil), rows[0].Prompt...), chat.Message{Role: "assistant", Content: text})
	return b.Reply(context.Background(), "e1", &rows[0], conv)
}

func newMarker(t *testing.T) string {
	m := fmt.Sprintf("grpo-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Setenv(markerEnv, m)
	return m
}

// A child that dies while a grandchild holds its stdout and stderr is
// dead at once: its exit is the death, not the end of its pipes; and the
// grandchild goes with it.
func TestDeathNotDelayedByGrandchild(t *testing.T) {
	marker := newMarker(t)
	b, _ := startEnv(t, "trouble", nil, Options{Timeout: 20 * time.Second, MaxCrashes: 5})
	start := time.Now()
	_, err := say(t, b, "spawn-and-exit")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the death took %v to notice", took)
	}
	if err == nil || !strings.Contains(err.Error(), "(exit status 3); its last stderr line: exiting with a child left behind") {
		t.Errorf("got %v", err)
	}
	gone(t, marker, 5*time.Second)
}

// A grandchild that left the group (setsid) and holds the pipes delays the
// death by drainGrace at most. It survives (no process-group kill reaches
// it), so the test ends it.
func TestDeathNotDelayedByEscapedGrandchild(t *testing.T) {
	marker := newMarker(t)
	t.Cleanup(func() { killMarked(marker) })
	b, _ := startEnv(t, "trouble", nil, Options{Timeout: 20 * time.Second, MaxCrashes: 5})
	start := time.Now()
	_, err := say(t, b, "escape-and-exit")
	if took := time.Since(start); took > drainGrace+3*time.Second {
		t.Errorf("the death took %v to notice", took)
	}
	if err == nil || !strings.Contains(err.Error(), "(exit status 4)") {
		t.Errorf("got %v", err)
	}
}

// killMarked ends the processes a test knowingly left behind.
func killMarked(marker string) {
	for _, p := range marked(marker) {
		var pid int
		fmt.Sscan(p, &pid)
		if pid > 0 && pid != os.Getpid() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// A response over maxLine fails its own request, found by the id that
// leads the line, and no other.
func TestOversizedResponseFailsItsRequest(t *testing.T) {
	c := &child{log: func(string) {}, pending: map[int64]chan response{}}
	mine, other := make(chan response, 1), make(chan response, 1)
	c.pending[7], c.pending[8] = mine, other
	c.oversized([]byte(`{"id": 7, "ok": true, "result": {"rows": [`), 80<<20)
	select {
	case r := <-mine:
		if r.OK || !strings.Contains(r.Error, "83886080 bytes, over grpo's 64 MiB bound") {
			t.Errorf("response %+v", r)
		}
	default:
		t.Fatal("request 7 was not failed")
	}
	if len(other) != 0 || c.pending[8] == nil {
		t.Error("request 8 was touched")
	}
}

// Close ends the child's whole process group, not only the child.
func TestCloseKillsWhatTheChildStarted(t *testing.T) {
	marker := newMarker(t)
	b, _ := startEnv(t, "trouble", nil, Options{})
	if _, err := say(t, b, "spawn"); err != nil {
		t.Fatal(err)
	}
	if n := len(marked(marker)); n < 2 {
		t.Fatalf("%d marked processes before Close, want python and the spawned ones", n)
	}
	b.Close()
	gone(t, marker, 5*time.Second)
}

// A 3 MiB line on stderr is drained (and logged cut), so the child never
// blocks on a full pipe.
func TestLongStderrLineDrained(t *testing.T) {
	b, logs := startEnv(t, "trouble", nil, Options{Timeout: 10 * time.Second})
	r, err := say(t, b, "long-stderr")
	if err != nil || len(r.Messages) != 1 || r.Messages[0].Content != "wrote" {
		t.Fatalf("reply = %+v, %v", r, err)
	}
	if !logs.has("(a 3145728-byte line, cut)") {
		t.Errorf("the long line was not logged cut")
	}
}

// The child's memory is bounded: a 1 GiB allocation under a 512 MiB limit
// is the environment's MemoryError, not the machine's OOM.
func TestMemoryLimit(t *testing.T) {
	b, _ := startEnv(t, "trouble", nil, Options{MaxMemory: 512 << 20})
	_, err := say(t, b, "alloc")
	if err == nil || !strings.Contains(err.Error(), "MemoryError") {
		t.Errorf("a 1 GiB allocation under a 512 MiB limit: %v", err)
	}
}

func TestReadLinesAnyLength(t *testing.T) {
	in := "a\n" + strings.Repeat("b", 200<<10) + "\n\nc"
	var got []string
	readLines(strings.NewReader(in), 100<<10, func(line []byte, n int) {
		got = append(got, fmt.Sprintf("%d/%d", len(line), n))
	})
	if want := []string{"1/1", "102400/204800", "0/0", "1/1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lines %v, want %v", got, want)
	}
}

// SIGKILL of the process that runs a bridge (grpo, here a helper test
// process) leaves none of its child's processes: the child dies of its
// parent-death signal, and its watchdog kills the rest of its group.
func TestSIGKILLOfParentLeavesNoProcess(t *testing.T) {
	stubPython(t)
	marker := fmt.Sprintf("grpo-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBridgeParent$", "-test.v")
	cmd.Env = append(os.Environ(), markerEnv+"="+marker, "GRPO_TEST_HELPER=1")
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	ready := make(chan bool)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "helper ready" {
				ready <- true
			}
		}
		close(ready)
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the helper ended before its environment started")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the helper did not start its environment in 30s")
	}
	if n := len(marked(marker)); n < 3 {
		t.Fatalf("%d marked processes, want the helper, python and the spawned ones", n)
	}
	cmd.Process.Kill()
	cmd.Wait()
	gone(t, marker, 5*time.Second)
}

// TestHelperBridgeParent is the process TestSIGKILLOfParentLeavesNoProcess
// kills: it starts an environment that spawns processes, then waits.
func TestHelperBridgeParent(t *testing.T) {
	if os.Getenv("GRPO_TEST_HELPER") != "1" {
		t.Skip("run by TestSIGKILLOfParentLeavesNoProcess")
	}
	b, _ := startEnv(t, "trouble", nil, Options{})
	if _, err := say(t, b, "spawn"); err != nil {
		t.Fatal(err)
	}
	fmt.Println("helper ready")
	time.Sleep(time.Minute)
}
