package cuda

import (
	"errors"
	"fmt"
)

// pool is the backend's caching allocator: every buffer (Backend.Alloc) and
// every scratch (f32 staging for bf16 uploads and downloads, bf16 copies
// of the activations of bf16-weight GEMMs, sampling parameters) comes from
// it, and goes back to it on Free, so a decode step or a train micro-batch
// that allocates and frees what the previous one did makes no cuMemAlloc,
// no cuMemFree and — since cuMemFree must wait for the stream — no host
// sync. Reuse right after put is safe because all work runs in issue order
// on one stream: the memory is released in stream order.
//
// Blocks are cached by exact size, so emu's bounds checks (an access
// outside its allocation is an error) stay as tight as without the pool.
// The cache is bounded by the peak of live bytes: once cached bytes exceed
// it the oldest cached blocks are really freed, and an allocation the
// device refuses is retried after freeing every cached block.
type pool struct {
	dev    Device
	free   map[int][]DevicePtr // cached blocks by size, most recent last
	size   map[DevicePtr]int   // every block the pool holds: live or cached
	cached map[DevicePtr]bool
	order  []DevicePtr // cached blocks in the order they were put, for eviction
	// live and cachedBytes are the bytes handed out and held for reuse;
	// peak is live's high-water mark.
	live, cachedBytes, peak int64
}

// minClass is the smallest scratch size class.
const minClass = 256

// sizeClass rounds scratch to a power of two, so scratch of varying sizes
// reuses a few blocks.
func sizeClass(bytes int) int {
	c := minClass
	for c < bytes {
		c <<= 1
	}
	return c
}

// ScratchClass is the block the pool hands out for a scratch of bytes:
// what sizing the pool before launch (the estimate's bf16 activation
// copies) counts.
func ScratchClass(bytes int) int { return sizeClass(bytes) }

// get returns a block of exactly bytes; fresh reports that it was just
// allocated (zeroed by the device) rather than recycled.
func (p *pool) get(bytes int) (ptr DevicePtr, fresh bool, err error) {
	if l := p.free[bytes]; len(l) > 0 {
		ptr = l[len(l)-1]
		p.free[bytes] = l[:len(l)-1]
		delete(p.cached, ptr)
		p.cachedBytes -= int64(bytes)
		p.hand(bytes)
		return ptr, false, nil
	}
	ptr, err = p.dev.Alloc(bytes)
	if err != nil && p.cachedBytes > 0 {
		// Cached blocks of other sizes may be what the device lacks.
		if terr := p.trim(0); terr != nil {
			return 0, false, errors.Join(err, terr)
		}
		ptr, err = p.dev.Alloc(bytes)
	}
	if err != nil {
		return 0, false, err
	}
	if p.size == nil {
		p.size = map[DevicePtr]int{}
	}
	p.size[ptr] = bytes
	p.hand(bytes)
	return ptr, true, nil
}

func (p *pool) hand(bytes int) {
	p.live += int64(bytes)
	p.peak = max(p.peak, p.live)
}

// put takes back a block from get for reuse by later work in stream
// order, then frees the oldest cached blocks beyond the peak of live
// bytes.
func (p *pool) put(ptr DevicePtr, bytes int) error {
	if n, ok := p.size[ptr]; !ok || n != bytes || p.cached[ptr] {
		return fmt.Errorf("pool: put of %d bytes at %#x, not a live block of that size", bytes, uintptr(ptr))
	}
	if p.free == nil {
		p.free, p.cached = map[int][]DevicePtr{}, map[DevicePtr]bool{}
	}
	p.free[bytes] = append(p.free[bytes], ptr)
	p.cached[ptr] = true
	p.order = append(p.order, ptr)
	p.live -= int64(bytes)
	p.cachedBytes += int64(bytes)
	return p.trim(p.peak)
}

// trim frees the oldest cached blocks until at most limit bytes are
// cached.
func (p *pool) trim(limit int64) error {
	var errs []error
	for p.cachedBytes > limit && len(p.order) > 0 {
		ptr := p.order[0]
		p.order = p.order[1:]
		if !p.cached[ptr] {
			continue // reused since it was put
		}
		n := p.size[ptr]
		l := p.free[n]
		for i := range l {
			if l[i] == ptr {
				p.free[n] = append(l[:i], l[i+1:]...)
				break
			}
		}
		delete(p.cached, ptr)
		delete(p.size, ptr)
		p.cachedBytes -= int64(n)
		errs = append(errs, p.dev.Free(ptr))
	}
	if len(p.order) > 0 && len(p.order) > 2*len(p.cached)+64 {
		// Drop the reused entries so order stays proportional to the cache.
		keep := p.order[:0]
		for _, ptr := range p.order {
			if p.cached[ptr] {
				keep = append(keep, ptr)
			}
		}
		p.order = keep
	}
	return errors.Join(errs...)
}

// release frees every block the pool holds, live or cached.
func (p *pool) release() error {
	var errs []error
	for ptr := range p.size {
		errs = append(errs, p.dev.Free(ptr))
	}
	*p = pool{dev: p.dev}
	return errors.Join(errs...)
}
