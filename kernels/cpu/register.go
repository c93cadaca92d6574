package cpu

import "github.com/grpo-dev/grpo/kernels"

func init() {
	kernels.Register("cpu", func() (kernels.Backend, error) { return New(), nil })
}
