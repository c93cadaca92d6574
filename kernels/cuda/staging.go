package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// stageChunk is the largest piece one staging buffer carries: a big upload
// (a weight tensor) goes through the buffers in turns, so the host copies
// one chunk while the DMA engine moves another, and pinned memory stays at
// most maxStageBufs × stageChunk however large the tensor.
const stageChunk = 16 << 20

// maxStageBufs and maxStageBytes bound the staging buffers (a train
// micro-batch queues seven small uploads before its first kernel); with
// no room for another the host waits for the one used longest ago.
const (
	maxStageBufs  = 16
	maxStageBytes = 4 * stageChunk
)

// stager moves host data to and from the device through page-locked
// buffers, each with an event that marks when the stream is done with it.
// Async copies need pinned memory to overlap anything (from pageable memory
// the driver copies synchronously through its own bounce buffer), and the
// event lets the host reuse a buffer without waiting for the whole stream.
// A buffer is taken only once its event says it is free (EventDone, no
// wait), else another is used, so the small uploads of a step whose last
// download already waited for the device make the host wait for nothing.
type stager struct {
	dev  Device
	bufs []*stageBuf
	uses uint64 // takes so far, to find the buffer used longest ago
}

type stageBuf struct {
	host  unsafe.Pointer // page-locked
	size  int
	done  Event  // recorded after the last copy that used host
	inUse bool   // done was recorded and not yet seen complete
	held  bool   // a download has yet to copy the contents out
	used  uint64 // stager.uses when last taken
}

// free reports, without waiting, whether the stream is done with sb.
func (s *stager) free(sb *stageBuf) (bool, error) {
	if sb.held {
		return false, nil
	}
	if sb.inUse {
		done, err := s.dev.EventDone(sb.done)
		if err != nil || !done {
			return false, err
		}
		sb.inUse = false
	}
	return true, nil
}

// take returns a buffer of at least bytes (≤ stageChunk) that the stream
// is done with: a free one if there is one, else a new one while there are
// fewer than maxStageBufs, else the one used longest ago once the stream
// is done with it.
func (s *stager) take(bytes int) (*stageBuf, error) {
	s.uses++
	var best, oldest *stageBuf
	// Buffers known free first; only then ask the device about busy ones
	// (each query is a call on the context thread).
	for pass := range 2 {
		for _, sb := range s.bufs {
			if pass == 0 && (sb.inUse || sb.held) {
				continue
			}
			ok, err := s.free(sb)
			if err != nil {
				return nil, err
			}
			if ok && sb.size >= bytes && (best == nil || sb.size < best.size) {
				best = sb
			}
			if pass == 1 && !sb.held && (oldest == nil || sb.used < oldest.used) {
				oldest = sb
			}
		}
		if best != nil {
			break
		}
	}
	if best != nil {
		best.used = s.uses
		return best, nil
	}
	held := 0
	for _, sb := range s.bufs {
		held += sb.size
	}
	if len(s.bufs) < maxStageBufs && held+min(sizeClass(bytes), stageChunk) <= maxStageBytes || oldest == nil {
		sb := &stageBuf{}
		if err := s.grow(sb, bytes); err != nil {
			return nil, err
		}
		s.bufs = append(s.bufs, sb)
		sb.used = s.uses
		return sb, nil
	}
	if err := s.settle(oldest); err != nil {
		return nil, err
	}
	if oldest.size < bytes {
		if err := s.grow(oldest, bytes); err != nil {
			return nil, err
		}
	}
	oldest.used = s.uses
	return oldest, nil
}

// grow gives sb page-locked memory for bytes, rounded up to a power of two
// up to a chunk (so a run of growing transfers reallocates a few times, not
// every time), and its event. The stream must be done with sb.
func (s *stager) grow(sb *stageBuf, bytes int) error {
	if sb.host != nil {
		if err := s.dev.HostFree(sb.host); err != nil {
			return err
		}
		sb.host, sb.size = nil, 0
	}
	size := min(sizeClass(bytes), stageChunk)
	p, err := s.dev.HostAlloc(size)
	if err != nil {
		return fmt.Errorf("page-locked staging of %d bytes: %w", size, err)
	}
	if sb.done == 0 {
		if sb.done, err = s.dev.NewEvent(); err != nil {
			return errors.Join(err, s.dev.HostFree(p))
		}
	}
	sb.host, sb.size = p, size
	return nil
}

// settle waits until the stream has finished with sb's last copy.
func (s *stager) settle(sb *stageBuf) error {
	if !sb.inUse {
		return nil
	}
	sb.inUse = false
	return s.dev.WaitEvent(sb.done)
}

// issued records sb's event after a copy that uses it.
func (s *stager) issued(sb *stageBuf) error {
	if err := s.dev.Record(sb.done); err != nil {
		return err
	}
	sb.inUse = true
	return nil
}

// upload copies bytes from host memory src (any memory: it is copied into
// staging before upload returns, so the caller may reuse it at once) to
// device memory dst. It returns without waiting for the device: the data
// arrives in stream order, before any later kernel reads it.
func (s *stager) upload(dst DevicePtr, src unsafe.Pointer, bytes int) error {
	for off := 0; off < bytes; off += stageChunk {
		n := min(stageChunk, bytes-off)
		sb, err := s.take(n)
		if err != nil {
			return err
		}
		copy(unsafe.Slice((*byte)(sb.host), n), unsafe.Slice((*byte)(unsafe.Add(src, off)), n))
		if err := s.dev.CopyHtoDAsync(dst+DevicePtr(off), sb.host, n); err != nil {
			return err
		}
		if err := s.issued(sb); err != nil {
			return err
		}
	}
	return nil
}

// download copies bytes of device memory src, after all work issued before
// it, into host memory dst. Chunk i+1's copy is queued before chunk i is
// waited for and copied out, so the two overlap.
func (s *stager) download(dst unsafe.Pointer, src DevicePtr, bytes int) error {
	type piece struct {
		sb     *stageBuf
		off, n int
	}
	var pending *piece
	defer func() {
		for _, sb := range s.bufs {
			sb.held = false // also after an error: the pieces are abandoned
		}
	}()
	finish := func(p *piece) error {
		p.sb.held = false
		if err := s.settle(p.sb); err != nil {
			return err
		}
		copy(unsafe.Slice((*byte)(unsafe.Add(dst, p.off)), p.n), unsafe.Slice((*byte)(p.sb.host), p.n))
		return nil
	}
	for off := 0; off < bytes; off += stageChunk {
		n := min(stageChunk, bytes-off)
		sb, err := s.take(n)
		if err != nil {
			return err
		}
		sb.held = true
		if err := s.dev.CopyDtoHAsync(sb.host, src+DevicePtr(off), n); err != nil {
			return err
		}
		if err := s.issued(sb); err != nil {
			return err
		}
		if pending != nil {
			if err := finish(pending); err != nil {
				return err
			}
		}
		pending = &piece{sb, off, n}
	}
	if pending != nil {
		return finish(pending)
	}
	return nil
}

// release waits for the buffers and frees them and their events.
func (s *stager) release() error {
	var errs []error
	for _, sb := range s.bufs {
		errs = append(errs, s.settle(sb))
		if sb.host != nil {
			errs = append(errs, s.dev.HostFree(sb.host))
		}
		if sb.done != 0 {
			errs = append(errs, s.dev.DestroyEvent(sb.done))
		}
	}
	s.bufs = nil
	return errors.Join(errs...)
}
