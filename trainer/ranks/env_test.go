package ranks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// TestFromEnv: each launcher's variables give the rank they say; none
// gives the single rank; partial, contradictory or out-of-range settings
// are refused in one line naming the variables.
func TestFromEnv(t *testing.T) {
	torch := map[string]string{"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "0", "MASTER_ADDR": "node0", "MASTER_PORT": "29500"}
	slurm := map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "8", "SLURM_LOCALID": "0", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "6000"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	good := []struct {
		name string
		env  map[string]string
		want Rank
	}{
		{"none", nil, Single},
		{"torchrun", torch, Rank{Rank: 2, WorldSize: 4, Addr: "node0:29500", Launcher: "torchrun"}},
		{"slurm", slurm, Rank{Rank: 3, WorldSize: 8, Addr: "10.0.0.1:6000", Launcher: "slurm"}},
		{"slurm one task", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_LOCALID": "0"}, Rank{WorldSize: 1, Launcher: "slurm"}},
		{"torchrun under srun, agreeing", with(torch, "SLURM_PROCID", "2", "SLURM_NTASKS", "4", "SLURM_LOCALID", "0"), Rank{Rank: 2, WorldSize: 4, Addr: "node0:29500", Launcher: "torchrun"}},
		{"ipv6", with(torch, "MASTER_ADDR", "fd00::1"), Rank{Rank: 2, WorldSize: 4, Addr: "[fd00::1]:29500", Launcher: "torchrun"}},
	}
	for _, c := range good {
		got, err := FromEnv(envOf(c.env))
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	bad := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"torchrun partial", map[string]string{"RANK": "1", "WORLD_SIZE": "2"}, "RANK, WORLD_SIZE set but LOCAL_RANK, MASTER_ADDR, MASTER_PORT not"},
		{"slurm partial", map[string]string{"SLURM_PROCID": "1"}, "SLURM_PROCID set but SLURM_NTASKS, SLURM_LOCALID not"},
		{"conflict", with(torch, "SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_LOCALID", "0"), "RANK=2 WORLD_SIZE=4 disagree with Slurm's SLURM_PROCID=1 SLURM_NTASKS=4"},
		{"rank past world", with(torch, "RANK", "4"), "RANK=4 with WORLD_SIZE=4: want 0 ≤ rank < world size"},
		{"not a number", with(torch, "WORLD_SIZE", "four"), `WORLD_SIZE="four": want a whole number`},
		{"negative", with(slurm, "SLURM_PROCID", "-1"), `SLURM_PROCID="-1"`},
		{"port", with(torch, "MASTER_PORT", "70000"), `MASTER_PORT="70000": want a TCP port`},
		{"two per node", with(torch, "LOCAL_RANK", "1"), "torchrun local rank 1: grpo runs one process per node"},
		{"srun without master", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0"}, "SLURM_NTASKS=2 but MASTER_ADDR and MASTER_PORT are unset"},
	}
	for _, c := range bad {
		_, err := FromEnv(envOf(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line containing %q", c.name, err, c.want)
		}
	}
}

// TestOnlyRankZeroWritesRunDir: three ranks run the same run-directory
// write through OnRankZero; the directory holds rank 0's file alone, and
// rank 0's error comes back.
func TestOnlyRankZeroWritesRunDir(t *testing.T) {
	dir := t.TempDir()
	for rank := 0; rank < 3; rank++ {
		r := Rank{Rank: rank, WorldSize: 3, Launcher: "torchrun"}
		err := r.OnRankZero(func() error {
			return os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(r.String()+"\n"), 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
		if r.WritesRunDir() != (rank == 0) {
			t.Errorf("rank %d: WritesRunDir = %v", rank, r.WritesRunDir())
		}
	}
	entries, _ := os.ReadDir(dir)
	b, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if len(entries) != 1 || string(b) != "rank 0 of 3 (torchrun)\n" {
		t.Errorf("run directory holds %d entries, metrics.jsonl = %q; want rank 0's alone", len(entries), b)
	}
	boom := errors.New("disk full")
	if err := Single.OnRankZero(func() error { return boom }); err != boom {
		t.Errorf("rank 0's error: %v", err)
	}
}
