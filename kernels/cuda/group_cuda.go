//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/grpo-dev/grpo/kernels"
)

// Devices of one process reduce over NCCL: one unique id, one
// communicator per device (a rank is a device), each joined from its own
// goroutine since ncclCommInitRank waits for every rank.
func init() {
	kernels.RegisterGroup("cuda", joinNCCL)
}

// joinNCCL is kernels.JoinGroup for cuda devices: rank i on bes[i].
func joinNCCL(bes []kernels.Backend, timeout time.Duration) ([]kernels.Collective, error) {
	// A rank that failed before ncclCommInitRank would leave the others
	// waiting there: what NewNCCL refuses is checked for all first.
	for _, be := range bes {
		if cb, ok := be.(*Backend); !ok {
			return nil, fmt.Errorf("nccl: the %s backend has no NCCL communicator", be.Name())
		} else if _, ok := cb.dev.Device.(*driverDevice); !ok {
			return nil, fmt.Errorf("nccl: the %s device is not a GPU", cb.dev.Name())
		}
	}
	id, err := NCCLUniqueID()
	if err != nil {
		return nil, err
	}
	comms := make([]kernels.Collective, len(bes))
	errs := make([]error, len(bes))
	var wg sync.WaitGroup
	for r, be := range bes {
		wg.Go(func() { comms[r], errs[r] = NewNCCL(be, id, r, len(bes), timeout) })
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
