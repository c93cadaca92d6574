package cuda

import "errors"

// pool recycles scratch device memory (f32 staging for bf16 uploads and
// downloads, bf16 copies of the activations of bf16-weight GEMMs, sampling
// parameters) by power-of-two size class, so steady-state ops
// do not call the allocator. Reuse right after put is safe because all work
// runs in issue order on one stream.
type pool struct {
	dev  Device
	free map[int][]DevicePtr
	all  []DevicePtr
}

const minClass = 256

func sizeClass(bytes int) int {
	c := minClass
	for c < bytes {
		c <<= 1
	}
	return c
}

func (p *pool) get(bytes int) (DevicePtr, error) {
	c := sizeClass(bytes)
	if l := p.free[c]; len(l) > 0 {
		ptr := l[len(l)-1]
		p.free[c] = l[:len(l)-1]
		return ptr, nil
	}
	ptr, err := p.dev.Alloc(c)
	if err != nil {
		return 0, err
	}
	p.all = append(p.all, ptr)
	return ptr, nil
}

func (p *pool) put(ptr DevicePtr, bytes int) {
	if p.free == nil {
		p.free = map[int][]DevicePtr{}
	}
	c := sizeClass(bytes)
	p.free[c] = append(p.free[c], ptr)
}

// release frees every allocation the pool ever made.
func (p *pool) release() error {
	var errs []error
	for _, ptr := range p.all {
		errs = append(errs, p.dev.Free(ptr))
	}
	p.all, p.free = nil, nil
	return errors.Join(errs...)
}
