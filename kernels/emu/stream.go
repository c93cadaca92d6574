package emu

/*
#include <stdlib.h>
#include <string.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/grpo-dev/grpo/kernels/cuda"
)

// stream is the emulated device's one stream as the host sees it. Async
// copies do not happen when issued: they are queued and run when the host
// waits for an event recorded after them, or when a later operation that
// touches device memory (a launch, a GEMM, CopyDtoD, Free, Sync) must come
// after them in stream order. So a host that reads a staging buffer before
// waiting for its copy reads stale data, and one that refills a buffer a
// queued copy still reads makes that copy carry the new data — the races a
// GPU has, but every time instead of sometimes.
type stream struct {
	host   map[uintptr]int // page-locked allocations: address → bytes
	queue  []pending
	issued uint64 // copies ever queued
	done   uint64 // copies ever run
	events map[cuda.Event]uint64
	last   cuda.Event
	// times are the timing events' latest Records on the host clock
	// (zero: never recorded); an event without an entry has no timing.
	times map[cuda.Event]time.Time
}

// pending is a queued copy and the page-locked range it uses.
type pending struct {
	run   func()
	host  uintptr
	bytes int
}

// flush runs every queued copy, in order.
func (d *Device) flush() { d.runUntil(d.stream.issued) }

func (d *Device) runUntil(n uint64) {
	s := &d.stream
	for s.done < n {
		op := s.queue[0]
		s.queue = s.queue[1:]
		s.done++
		op.run()
	}
}

// HostAlloc returns C heap memory standing in for page-locked memory,
// filled with 0xFF bytes (NaN as float32) so that reading it before a copy
// has landed gives NaN rather than plausible zeros.
func (d *Device) HostAlloc(bytes int) (unsafe.Pointer, error) {
	if err := d.refuse("HostAlloc"); err != nil {
		return nil, err
	}
	if bytes <= 0 {
		return nil, fmt.Errorf("emu: HostAlloc(%d)", bytes)
	}
	p := C.malloc(C.size_t(bytes))
	if p == nil {
		return nil, fmt.Errorf("emu: out of host memory allocating %d page-locked bytes", bytes)
	}
	C.memset(p, 0xFF, C.size_t(bytes))
	d.stream.host[uintptr(p)] = bytes
	return p, nil
}

// HostFree refuses memory a queued copy still uses: on a GPU that copy
// would read or write freed memory.
func (d *Device) HostFree(p unsafe.Pointer) error {
	if err := d.refuse("HostFree"); err != nil {
		return err
	}
	s := &d.stream
	n, ok := s.host[uintptr(p)]
	if !ok {
		return fmt.Errorf("emu: HostFree(%p): not page-locked memory of this device", p)
	}
	for _, q := range s.queue {
		if q.host < uintptr(p)+uintptr(n) && uintptr(p) < q.host+uintptr(q.bytes) {
			return fmt.Errorf("emu: HostFree of %d page-locked bytes at %p while a queued copy still uses them (wait for its event first)", n, p)
		}
	}
	delete(s.host, uintptr(p))
	C.free(p)
	return nil
}

func (d *Device) freeHost() {
	for p := range d.stream.host {
		C.free(unsafe.Add(nil, p))
	}
	d.stream.host = map[uintptr]int{}
}

// checkHost verifies [p, p+bytes) lies inside one page-locked allocation:
// the async copies take no other host memory.
func (d *Device) checkHost(what string, p unsafe.Pointer, bytes int) error {
	for base, n := range d.stream.host {
		if uintptr(p) >= base && uintptr(p)+uintptr(bytes) <= base+uintptr(n) {
			return nil
		}
	}
	return fmt.Errorf("emu: %s of %d bytes: host address %p is not inside page-locked memory from HostAlloc", what, bytes, p)
}

func (d *Device) enqueue(host unsafe.Pointer, bytes int, run func()) {
	d.stream.queue = append(d.stream.queue, pending{run, uintptr(host), bytes})
	d.stream.issued++
}

func (d *Device) CopyHtoDAsync(dst cuda.DevicePtr, src unsafe.Pointer, bytes int) error {
	if err := d.refuse("CopyHtoDAsync"); err != nil {
		return err
	}
	if err := errors.Join(d.check("CopyHtoDAsync", dst, bytes), d.checkHost("CopyHtoDAsync", src, bytes)); err != nil {
		return err
	}
	d.enqueue(src, bytes, func() { C.memcpy(ptrOf(dst), src, C.size_t(bytes)) })
	return nil
}

func (d *Device) CopyDtoHAsync(dst unsafe.Pointer, src cuda.DevicePtr, bytes int) error {
	if err := d.refuse("CopyDtoHAsync"); err != nil {
		return err
	}
	if err := errors.Join(d.check("CopyDtoHAsync", src, bytes), d.checkHost("CopyDtoHAsync", dst, bytes)); err != nil {
		return err
	}
	d.enqueue(dst, bytes, func() { C.memcpy(dst, ptrOf(src), C.size_t(bytes)) })
	return nil
}

func (d *Device) NewEvent() (cuda.Event, error) {
	s := &d.stream
	s.last++
	s.events[s.last] = 0 // never recorded: complete, as cuEventSynchronize says
	return s.last, nil
}

func (d *Device) Record(e cuda.Event) error {
	if _, ok := d.stream.events[e]; !ok {
		return fmt.Errorf("emu: Record of event %d, not one of this device's", e)
	}
	d.stream.events[e] = d.stream.issued
	if _, ok := d.stream.times[e]; ok {
		d.stream.times[e] = time.Now()
	}
	return nil
}

// NewTimingEvent is an event whose Record notes the host clock. Kernels,
// GEMMs, memsets and device copies run when issued, so the time between
// two Records around one of them is its run time; the async copies run
// only when something waits for them (stream), so the time around one is
// that of queueing it, near zero.
func (d *Device) NewTimingEvent() (cuda.Event, error) {
	e, err := d.NewEvent()
	if err == nil {
		d.stream.times[e] = time.Time{}
	}
	return e, err
}

// Elapsed refuses what cuEventElapsedTime refuses: an event without
// timing (CUDA_ERROR_INVALID_HANDLE), one never recorded or whose
// recorded copies have not run (CUDA_ERROR_NOT_READY), so a profile that
// reads its events before waiting fails here as on a GPU.
func (d *Device) Elapsed(start, end cuda.Event) (float64, error) {
	s := &d.stream
	var t [2]time.Time
	for i, e := range [2]cuda.Event{start, end} {
		at, ok := s.times[e]
		switch n, known := s.events[e]; {
		case !known:
			return 0, fmt.Errorf("emu: Elapsed of event %d, not one of this device's", e)
		case !ok:
			return 0, fmt.Errorf("emu: Elapsed of event %d, made without timing (CUDA_ERROR_INVALID_HANDLE)", e)
		case at.IsZero() || s.done < n:
			return 0, fmt.Errorf("emu: Elapsed of event %d, not recorded or its work not done (CUDA_ERROR_NOT_READY)", e)
		}
		t[i] = at
	}
	return float64(t[1].Sub(t[0]).Nanoseconds()) / 1e6, nil
}

// WaitEvent runs the queued copies up to e's latest Record, and no
// further: copies issued after it stay pending.
func (d *Device) WaitEvent(e cuda.Event) error {
	if err := d.refuse("WaitEvent"); err != nil {
		return err
	}
	n, ok := d.stream.events[e]
	if !ok {
		return fmt.Errorf("emu: WaitEvent on event %d, not one of this device's", e)
	}
	d.runUntil(n)
	return nil
}

// EventDone reports whether the copies up to e's latest Record have run;
// it runs nothing (a GPU's copies progress on their own, the emulator's
// only when something needs them).
func (d *Device) EventDone(e cuda.Event) (bool, error) {
	n, ok := d.stream.events[e]
	if !ok {
		return false, fmt.Errorf("emu: EventDone of event %d, not one of this device's", e)
	}
	return d.stream.done >= n, nil
}

func (d *Device) DestroyEvent(e cuda.Event) error {
	if _, ok := d.stream.events[e]; !ok {
		return fmt.Errorf("emu: DestroyEvent of event %d, not one of this device's", e)
	}
	delete(d.stream.events, e)
	delete(d.stream.times, e)
	return nil
}
