package replicas

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/netcoll"
	"github.com/grpo-dev/grpo/rundir"
	"github.com/grpo-dev/grpo/trainer/ranks"
)

// World is the job's processes as the replicas see them, under srun or
// torchrun: this process is rank Rank.Rank of Rank.WorldSize, each with
// the same number of devices, and every device of every process is a
// rank of one collective — device d of process p is rank p·D + d — so a
// step's groups are spread over all of them and one all-reduce sums the
// gradients of all. A nil *World is a run of one process.
type World struct {
	Rank    ranks.Rank
	job     *ranks.Job
	hub     *netcoll.Hub // rank 0's, for host-memory backends
	devices int          // per process
	backend string
	timeout time.Duration // a collective's wait for the last rank
	// scratch is where a rank other than 0 writes what the run writes
	// (Dir): the run directory is rank 0's alone.
	scratch string

	mu       sync.Mutex
	lost     error // the job's first lost rank (ranks.Job.Lost)
	colls    []kernels.Collective
	finished bool
	done     chan struct{}
}

// DefaultRendezvousTimeout bounds the wait for every process to arrive;
// GRPO_RENDEZVOUS_TIMEOUT (a Go duration, e.g. 30s) overrides it.
const DefaultRendezvousTimeout = 5 * time.Minute

// Meet reads this process's rank from the launcher's variables
// (ranks.FromEnv) and, in a job of several processes, meets the others
// (ranks.Meet): rank 0 makes the id the devices' collective is formed
// from — NCCL's unique id for a backend with a group of its own (cuda),
// else a kernels/netcoll hub's — and the rendezvous hands it to every
// rank. devices is this process's device count, of backend be (opened
// by the caller) or else of the kind of device id; timeout bounds a
// collective's wait for the last rank (0: 10 minutes). It returns nil for
// a process that no launcher started.
func Meet(ctx context.Context, be kernels.Backend, id kernels.DeviceID, devices int, timeout time.Duration) (*World, error) {
	r, err := ranks.FromEnv(os.Getenv)
	if err != nil || r.WorldSize == 1 {
		return nil, err
	}
	backend := id.Backend
	if be != nil {
		backend = be.Name()
	}
	wait := DefaultRendezvousTimeout
	if s := os.Getenv("GRPO_RENDEZVOUS_TIMEOUT"); s != "" {
		if wait, err = time.ParseDuration(s); err != nil || wait <= 0 {
			return nil, fmt.Errorf("GRPO_RENDEZVOUS_TIMEOUT=%q: want a positive duration, e.g. 5m", s)
		}
	}
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	w := &World{Rank: r, devices: devices, backend: backend, timeout: timeout, done: make(chan struct{})}
	w.job, err = ranks.Meet(ctx, r, w.newID, wait)
	if err != nil {
		if w.hub != nil {
			w.hub.Close()
		}
		return nil, err
	}
	go w.watch()
	if !r.WritesRunDir() {
		if w.scratch, err = os.MkdirTemp("", fmt.Sprintf("grpo-rank%d-", r.Rank)); err != nil {
			w.Close(err)
			return nil, err
		}
	}
	return w, nil
}

// newID is rank 0's id for the rendezvous to hand out.
func (w *World) newID() (out [ranks.IDBytes]byte, err error) {
	id, ok, err := kernels.NewGroupID(w.backend)
	if ok {
		if err == nil && len(id) != ranks.IDBytes {
			err = fmt.Errorf("the %s group id has %d bytes, the rendezvous hands out %d", w.backend, len(id), ranks.IDBytes)
		}
		copy(out[:], id)
		return out, err
	}
	if w.hub, err = netcoll.Listen(w.Rank.WorldSize*w.devices, w.devices, w.timeout); err != nil {
		return out, err
	}
	return w.hub.ID().Bytes(), nil
}

// watch aborts every collective of this process once the job reports a
// rank gone, so a step waiting on it ends with the rank's name.
func (w *World) watch() {
	select {
	case err := <-w.job.Lost():
		w.mu.Lock()
		w.lost = err
		colls := w.colls
		w.mu.Unlock()
		for _, c := range colls {
			c.Abort(err)
		}
	case <-w.done:
	}
}

// join forms the collective of this process's devices bes as ranks of
// the job's: their backend's group at this process's place (NCCL), or
// netcoll — rank 0's devices at its hub, the others' dialled in.
func (w *World) join(bes []kernels.Backend) ([]kernels.Collective, error) {
	if len(bes) != w.devices {
		return nil, fmt.Errorf("ranks: %d devices, %d when the job met", len(bes), w.devices)
	}
	first, size := w.Rank.Rank*w.devices, w.Rank.WorldSize*w.devices
	comms, ok, err := kernels.JoinGroupAt(bes, &kernels.GroupAt{ID: w.job.ID[:], First: first, Size: size}, w.timeout)
	if !ok {
		comms, err = w.joinNet(bes, first, size)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.Rank, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.colls = comms
	if w.lost != nil {
		for _, c := range comms {
			c.Abort(w.lost)
		}
	}
	return comms, nil
}

func (w *World) joinNet(bes []kernels.Backend, first, size int) ([]kernels.Collective, error) {
	comms := make([]kernels.Collective, len(bes))
	if w.hub != nil {
		for d, be := range bes {
			var err error
			if comms[d], err = w.hub.Join(d, be); err != nil {
				return nil, err
			}
		}
		return comms, nil
	}
	id, err := netcoll.ParseID(w.job.ID)
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(w.Rank.Addr)
	if err != nil {
		return nil, err
	}
	for d, be := range bes {
		if comms[d], err = netcoll.Dial(host, id, first+d, size, be, w.timeout); err != nil {
			return nil, err
		}
	}
	return comms, nil
}

// Dir opens the directory this process writes the run to: on rank 0 the
// run directory (created, or opened to resume), elsewhere a scratch
// directory of its own, removed by Close — the other ranks run the same
// loop, which writes as it goes, but nothing of theirs lands in the run
// directory, whose lock stays rank 0's. To resume, the scratch directory
// starts with the run's metrics and eval rows, which the loop reads back.
func (w *World) Dir(output string, resume bool) (*rundir.Dir, error) {
	switch {
	case w != nil && w.scratch != "":
		d, err := rundir.Create(w.scratch)
		for _, name := range []string{"metrics.jsonl", "eval.jsonl"} {
			if b, rerr := os.ReadFile(filepath.Join(output, name)); err == nil && resume && rerr == nil {
				err = os.WriteFile(filepath.Join(w.scratch, name), b, 0o644)
			}
		}
		return d, err
	case resume:
		return rundir.Open(output)
	}
	return rundir.Create(output)
}

// RunDir is dir, the directory the run writes, on rank 0 (or in a job of
// one process), and "" on the other ranks, whose dir is scratch.
func (w *World) RunDir(dir string) string {
	if w != nil && w.scratch != "" {
		return ""
	}
	return dir
}

// Restore runs restore (the trainer's resume) with *ckDir, on a rank
// other than 0, at the run directory's checkpoints — rank 0 wrote them,
// on a file system every node sees — instead of its scratch directory's.
func (w *World) Restore(ckDir *string, runCheckpoints string, restore func() error) error {
	if w == nil || w.scratch == "" {
		return restore()
	}
	own := *ckDir
	*ckDir = runCheckpoints
	defer func() { *ckDir = own }()
	return restore()
}

// Finished marks the job's steps done on this rank: Close then says
// goodbye instead of failing the others.
func (w *World) Finished() {
	if w != nil {
		w.mu.Lock()
		w.finished = true
		w.mu.Unlock()
	}
}

// Close leaves the job and removes the scratch directory. After Finished
// it says goodbye to every rank; before (a failed setup or step, why
// given or nil) it aborts this process's collectives and drops the job's
// connections without one, so every other rank's step ends naming this
// rank instead of waiting for it.
func (w *World) Close(why error) {
	if w == nil {
		return
	}
	select {
	case <-w.done:
		return
	default:
	}
	close(w.done)
	w.mu.Lock()
	finished, colls := w.finished, w.colls
	w.mu.Unlock()
	if finished {
		w.job.Close()
	} else {
		if why == nil {
			why = errors.New("it ended before the job did")
		}
		why = fmt.Errorf("%s failed: %w", w.Rank, why)
		for _, c := range colls {
			c.Abort(why)
		}
		w.job.Abandon()
	}
	if w.hub != nil {
		w.hub.Close() // if the devices never joined
	}
	if w.scratch != "" {
		os.RemoveAll(w.scratch)
	}
}

// first is this process's first device's rank among all devices, and
// parts how many devices there are.
func (w *World) first(local int) (first, parts int) {
	if w == nil {
		return 0, local
	}
	return w.Rank.Rank * local, w.Rank.WorldSize * local
}
