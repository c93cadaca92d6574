// Package ranks is which process of a multi-node job this one is, and how
// the processes meet: the rank read from the launcher's environment
// (torchrun's RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT, Slurm's
// SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID), a TCP rendezvous in which rank
// 0 hands every rank the id the job's collective is formed from (NCCL's
// unique id; for cpu replicas a kernels/netcoll hub's), and which rank
// writes the run directory. grpo runs one process per node, one goroutine per device, so a
// rank is a node.
//
// It sits under trainer because launching and joining ranks is the
// training loop's concern (DESIGN.md: trainer owns "ranks across nodes"),
// apart from the loop's own files; it imports nothing of grpo's, so
// cmd/grpo, serve and the trainer can each ask it without a cycle, and
// the NCCL id is plain bytes here (kernels/cuda makes and uses it).
package ranks

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Rank is this process's place in the job.
type Rank struct {
	Rank, WorldSize int
	// LocalRank is the process's index on its node; grpo wants one process
	// per node, so it is 0.
	LocalRank int
	// Addr is rank 0's rendezvous address (MASTER_ADDR:MASTER_PORT); ""
	// in a single-process run.
	Addr string
	// Launcher says where the rank came from: "torchrun", "slurm", or
	// "single" when no launcher variable is set.
	Launcher string
}

// Single is the rank of a run that no launcher started.
var Single = Rank{WorldSize: 1, Launcher: "single"}

var (
	torchrunVars = []string{"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}
	slurmVars    = []string{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"}
)

// FromEnv reads the rank from the launcher's variables: torchrun's five
// (all or none), or Slurm's three (all or none; srun does not say where
// rank 0 listens, so MASTER_ADDR and MASTER_PORT are needed too when
// SLURM_NTASKS > 1 — docs/scale.md's sbatch script exports them). When
// both launchers' variables are set (torchrun under srun) they must agree.
// Every refusal is one line naming the variables and the fix.
func FromEnv(getenv func(string) string) (Rank, error) {
	torch, err := torchrunRank(getenv)
	if err != nil {
		return Rank{}, err
	}
	slurm, err := slurmRank(getenv)
	if err != nil {
		return Rank{}, err
	}
	var r Rank
	switch {
	case torch != nil && slurm != nil:
		if torch.Rank != slurm.Rank || torch.WorldSize != slurm.WorldSize {
			return Rank{}, fmt.Errorf("ranks: torchrun's RANK=%d WORLD_SIZE=%d disagree with Slurm's SLURM_PROCID=%d SLURM_NTASKS=%d: run one grpo per node (srun --ntasks-per-node=1, torchrun --nproc-per-node=1) or unset one launcher's variables",
				torch.Rank, torch.WorldSize, slurm.Rank, slurm.WorldSize)
		}
		r = *torch
	case torch != nil:
		r = *torch
	case slurm != nil:
		r = *slurm
	default:
		return Single, nil
	}
	if r.LocalRank != 0 {
		return Rank{}, fmt.Errorf("ranks: %s local rank %d: grpo runs one process per node, which drives every GPU of the node (--devices); launch with --nproc-per-node=1 (torchrun) or --ntasks-per-node=1 (srun)",
			r.Launcher, r.LocalRank)
	}
	if r.WorldSize > 1 && r.Addr == "" {
		return Rank{}, fmt.Errorf("ranks: SLURM_NTASKS=%d but MASTER_ADDR and MASTER_PORT are unset: srun does not say where rank 0 listens; export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1) MASTER_PORT=29500 before srun (docs/scale.md)", r.WorldSize)
	}
	return r, nil
}

// torchrunRank is the rank from torchrun's variables, nil if none is set.
func torchrunRank(getenv func(string) string) (*Rank, error) {
	// MASTER_ADDR/PORT alone do not make a torchrun launch: an sbatch
	// script exports them for srun too.
	if set, _ := present(getenv, torchrunVars[:3]); len(set) == 0 {
		return nil, nil
	}
	set, missing := present(getenv, torchrunVars)
	if len(missing) > 0 {
		return nil, fmt.Errorf("ranks: %s set but %s not: torchrun sets all of %s; set the rest or unset these",
			strings.Join(set, ", "), strings.Join(missing, ", "), strings.Join(torchrunVars, ", "))
	}
	r := Rank{Launcher: "torchrun"}
	var err error
	if r.Rank, r.WorldSize, r.LocalRank, err = rankInts(getenv, "RANK", "WORLD_SIZE", "LOCAL_RANK"); err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(getenv("MASTER_PORT"))
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("ranks: MASTER_PORT=%q: want a TCP port, 1 to 65535, e.g. MASTER_PORT=29500", getenv("MASTER_PORT"))
	}
	r.Addr = net.JoinHostPort(getenv("MASTER_ADDR"), strconv.Itoa(port))
	return &r, nil
}

// slurmRank is the rank from srun's variables, nil if none is set; its
// Addr comes from MASTER_ADDR/MASTER_PORT when both are set.
func slurmRank(getenv func(string) string) (*Rank, error) {
	set, missing := present(getenv, slurmVars)
	if len(set) == 0 {
		return nil, nil
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("ranks: %s set but %s not: srun sets all of %s; run grpo under srun, or unset these",
			strings.Join(set, ", "), strings.Join(missing, ", "), strings.Join(slurmVars, ", "))
	}
	r := Rank{Launcher: "slurm"}
	var err error
	if r.Rank, r.WorldSize, r.LocalRank, err = rankInts(getenv, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"); err != nil {
		return nil, err
	}
	if a, p := getenv("MASTER_ADDR"), getenv("MASTER_PORT"); a != "" && p != "" {
		port, err := strconv.Atoi(p)
		if err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("ranks: MASTER_PORT=%q: want a TCP port, 1 to 65535, e.g. MASTER_PORT=29500", p)
		}
		r.Addr = net.JoinHostPort(a, p)
	}
	return &r, nil
}

// present splits names into those set (non-empty) and those not.
func present(getenv func(string) string, names []string) (set, missing []string) {
	for _, n := range names {
		if getenv(n) != "" {
			set = append(set, n)
		} else {
			missing = append(missing, n)
		}
	}
	return set, missing
}

// rankInts parses the rank, world size and local rank variables and
// checks 0 ≤ rank < world size, local rank ≥ 0.
func rankInts(getenv func(string) string, rankVar, worldVar, localVar string) (rank, world, local int, err error) {
	vals := map[string]int{}
	for _, n := range []string{rankVar, worldVar, localVar} {
		v, err := strconv.Atoi(getenv(n))
		if err != nil || v < 0 {
			return 0, 0, 0, fmt.Errorf("ranks: %s=%q: want a whole number ≥ 0", n, getenv(n))
		}
		vals[n] = v
	}
	rank, world, local = vals[rankVar], vals[worldVar], vals[localVar]
	if world < 1 || rank >= world {
		return 0, 0, 0, fmt.Errorf("ranks: %s=%d with %s=%d: want 0 ≤ rank < world size", rankVar, rank, worldVar, world)
	}
	return rank, world, local, nil
}

// WritesRunDir reports whether this rank writes the run directory: rank 0
// alone writes metrics, checkpoints and the adapter, so nodes sharing a
// file system do not write one directory several times over.
func (r Rank) WritesRunDir() bool { return r.Rank == 0 }

// OnRankZero runs f, which writes under the run directory, on rank 0 and
// returns its error; on any other rank it does nothing. The trainer wraps
// every run-directory write in it.
func (r Rank) OnRankZero(f func() error) error {
	if !r.WritesRunDir() {
		return nil
	}
	return f()
}

// String is a rank for log lines: "rank 2 of 4 (slurm)".
func (r Rank) String() string {
	return fmt.Sprintf("rank %d of %d (%s)", r.Rank, r.WorldSize, r.Launcher)
}
