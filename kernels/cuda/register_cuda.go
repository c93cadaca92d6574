//go:build cuda

package cuda

import "github.com/grpo-dev/grpo/kernels"

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
}
