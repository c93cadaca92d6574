package ranks

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// childEnv marks a test binary started by TestRendezvousProcesses as one
// rank: it reads its rank from the launcher's variables, meets the others
// and prints the id.
const childEnv = "GRPO_RANKS_TEST_CHILD"

// childDies names the rank that exits abruptly after meeting the others;
// the rest wait for Lost and print it.
const childDies = "GRPO_RANKS_TEST_DIES"

func dieOrWatch(r Rank, die bool) error {
	j, err := Meet(context.Background(), r, func() ([IDBytes]byte, error) { return [IDBytes]byte{1}, nil }, 5*time.Second)
	if err != nil {
		return err
	}
	if die {
		os.Exit(3) // no Close: as a crash
	}
	select {
	case err := <-j.Lost():
		return err
	case <-time.After(20 * time.Second):
		return fmt.Errorf("no rank reported lost in 20s")
	}
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		r, err := FromEnv(os.Getenv)
		if err == nil && os.Getenv(childDies) != "" {
			err = dieOrWatch(r, os.Getenv(childDies) == strconv.Itoa(r.Rank))
		} else if err == nil {
			var id [IDBytes]byte
			id, err = Rendezvous(context.Background(), r, func() (id [IDBytes]byte, err error) {
				copy(id[:], fmt.Sprintf("id of pid %d", os.Getpid()))
				return id, nil
			}, 2*time.Second)
			if err == nil {
				fmt.Println("id", hex.EncodeToString(id[:]))
				os.Exit(0)
			}
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestRendezvousProcesses: three processes launched as srun would (Slurm's
// variables plus MASTER_ADDR/PORT) all print rank 0's id; with rank 2
// never started, ranks 0 and 1 exit non-zero within seconds, rank 0 naming
// rank 2.
func TestRendezvousProcesses(t *testing.T) {
	addr := freeAddr(t)
	host, port, _ := strings.Cut(addr, ":")
	start := func(rank, world int) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", "SLURM_PROCID="+strconv.Itoa(rank), "SLURM_NTASKS="+strconv.Itoa(world),
			"SLURM_LOCALID=0", "MASTER_ADDR="+host, "MASTER_PORT="+port)
		return cmd
	}
	run := func(cmds []*exec.Cmd) ([]string, []error) {
		outs := make([]string, len(cmds))
		errs := make([]error, len(cmds))
		done := make(chan int)
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
			case <-time.After(30 * time.Second):
				t.Fatal("a rank process did not exit within 30s")
			}
		}
		return outs, errs
	}
	outs, errs := run([]*exec.Cmd{start(0, 3), start(1, 3), start(2, 3)})
	for i := range outs {
		if errs[i] != nil || !strings.HasPrefix(outs[i], "id ") || outs[i] != outs[0] {
			t.Errorf("rank %d: %v: %q (rank 0: %q)", i, errs[i], outs[i], outs[0])
		}
	}
	began := time.Now()
	outs, errs = run([]*exec.Cmd{start(0, 3), start(1, 3)})
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("the ranks took %v to give up on a 2s timeout", took)
	}
	for i := range outs {
		if errs[i] == nil || !strings.Contains(outs[i], "rank(s) [2] of 3 did not reach rank 0") {
			t.Errorf("rank %d without rank 2: %v: %q", i, errs[i], outs[i])
		}
	}
}

// TestLostRankProcess: three rank processes meet; rank 2 exits without a
// goodbye (a crash); ranks 0 and 1 each end within seconds with a message
// naming rank 2 (the issue's "a peer killed mid-step ends every other rank
// with a message naming it", at the job level).
func TestLostRankProcess(t *testing.T) {
	addr := freeAddr(t)
	host, port, _ := strings.Cut(addr, ":")
	outs := make([]string, 3)
	done := make(chan int, 3)
	for r := 0; r < 3; r++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", childDies+"=2", "RANK="+strconv.Itoa(r), "WORLD_SIZE=3", "LOCAL_RANK=0",
			"MASTER_ADDR="+host, "MASTER_PORT="+port)
		go func() {
			b, _ := cmd.CombinedOutput()
			outs[r] = string(b)
			done <- r
		}()
	}
	start := time.Now()
	for range 3 {
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			t.Fatal("a rank process did not exit within 40s")
		}
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("took %v", took)
	}
	for r := 0; r < 2; r++ {
		if !strings.Contains(outs[r], "rank 2 of 3") || !strings.Contains(outs[r], "is gone") {
			t.Errorf("rank %d printed %q; want rank 2 named", r, outs[r])
		}
	}
}
