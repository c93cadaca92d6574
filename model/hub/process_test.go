package hub

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestHelperDownload is the child side of TestTwoProcessesShareTheCache;
// it does nothing in a normal run.
func TestHelperDownload(t *testing.T) {
	if os.Getenv("GRPO_HUB_HELPER") != "1" {
		t.Skip("helper for TestTwoProcessesShareTheCache")
	}
	dir, err := Download(context.Background(), "Org/Tiny", Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(dir)
}

// Two grpo processes downloading the same model into one cache (two
// training jobs started together) must both succeed and transfer the
// weights once: the second waits on the blob's lock file and then finds
// the finished blob.
func TestTwoProcessesShareTheCache(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	f := newFakeHub(t)
	files := tinyModel()
	repo := f.addRepo("model", "Org/Tiny", false, files)
	f.cdnDelay = 100 * time.Millisecond
	isolate(t)
	cache := t.TempDir()
	var cmds []*exec.Cmd
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDownload$")
		cmd.Env = append(os.Environ(), "GRPO_HUB_HELPER=1", "HF_ENDPOINT="+f.hub.URL, "HF_HUB_CACHE="+cache)
		cmds = append(cmds, cmd)
	}
	outs := make([][]byte, len(cmds))
	errs := make([]error, len(cmds))
	done := make(chan int)
	for i, cmd := range cmds {
		go func() { outs[i], errs[i] = cmd.CombinedOutput(); done <- i }()
	}
	for range cmds {
		<-done
	}
	for i := range cmds {
		if errs[i] != nil {
			t.Fatalf("process %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	dir := newRepoCache(&settings{Options: Options{CacheDir: cache}, repoType: Model}, "Org/Tiny").snapshotDir(repo.commit)
	checkSnapshot(t, dir, files, modelFiles)
	if n := f.count(f.cdnGet("")); n != 1 {
		t.Fatalf("weights transferred %d times by two processes, want 1", n)
	}
}
