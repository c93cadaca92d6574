package cpu

// WithFault builds the backend on a deliberately broken copy of the
// widest C kernels (vec_kernels.h: 1 = lane 3 of every exp vector skips
// its 2^k scaling, 2 = an exp loop's tail drops its last element), for
// the mutant tests. Without cgo there are no C kernels and KernelsName is
// "go".
func WithFault(f int) Option { return func(c *config) { c.fault = f } }
