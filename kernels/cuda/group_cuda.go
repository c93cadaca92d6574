//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/kernels"
)

// Devices reduce over NCCL: one unique id, one communicator per device (a
// rank is a device), each joined from its own goroutine since
// ncclCommInitRank waits for every rank. Across processes the id is made
// once on the job's rank 0 (newNCCLID) and handed out by the rendezvous.
func init() {
	kernels.RegisterGroup("cuda", joinNCCL, newNCCLID)
}

// newNCCLID is ncclGetUniqueId's id as bytes.
func newNCCLID() ([]byte, error) {
	id, err := NCCLUniqueID()
	return id[:], err
}

// joinNCCL is kernels.JoinGroupAt for cuda devices: rank at.First+i on
// bes[i] (rank i of len(bes), with an id of its own, when at is nil).
func joinNCCL(bes []kernels.Backend, at *kernels.GroupAt, timeout time.Duration) ([]kernels.Collective, error) {
	// A rank that failed before ncclCommInitRank would leave the others
	// waiting there: what NewNCCL refuses is checked for all first.
	for _, be := range bes {
		if cb, ok := be.(*Backend); !ok {
			return nil, fmt.Errorf("nccl: the %s backend has no NCCL communicator", be.Name())
		} else if _, ok := cb.dev.Device.(*driverDevice); !ok {
			return nil, fmt.Errorf("nccl: the %s device is not a GPU", cb.dev.Name())
		}
	}
	var id [NCCLUniqueIDBytes]byte
	first, size := 0, len(bes)
	if at == nil {
		var err error
		if id, err = NCCLUniqueID(); err != nil {
			return nil, err
		}
	} else {
		if len(at.ID) != NCCLUniqueIDBytes {
			return nil, fmt.Errorf("nccl: an id of %d bytes: want ncclGetUniqueId's %d (every node must run the cuda backend)", len(at.ID), NCCLUniqueIDBytes)
		}
		id, first, size = [NCCLUniqueIDBytes]byte(at.ID), at.First, at.Size
	}
	comms := make([]kernels.Collective, len(bes))
	errs := make([]error, len(bes))
	var wg sync.WaitGroup
	for r, be := range bes {
		wg.Go(func() { comms[r], errs[r] = NewNCCL(be, id, first+r, size, timeout) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range comms {
			if c != nil {
				c.Abort(err)
				c.Close()
			}
		}
		return nil, err
	}
	return comms, nil
}
