//go:build cuda

package cuda

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
	"gorgonia.org/cu"
)

// Only a binary built with -tags cuda links gorgonia.org/cu, whose package
// init calls cuInit and exits the process when no driver is present.
func init() {
	kernels.Register("cuda", func() (kernels.Backend, error) {
		d, err := openDriver(0)
		if err != nil {
			return nil, err
		}
		return New(d), nil
	})
	// cuda:N (--devices): the driver's ordinal N, counted among the
	// devices CUDA_VISIBLE_DEVICES leaves visible.
	kernels.RegisterIndexed("cuda", func(index int) (kernels.Backend, error) {
		if n, err := cu.NumDevices(); err == nil && index >= n {
			return nil, fmt.Errorf("cuda:%d is out of range: the driver sees %d GPU(s), cuda:0 to cuda:%d", index, n, n-1)
		}
		d, err := openDriver(index)
		if err != nil {
			return nil, err
		}
		return New(d), nil
	})
}
