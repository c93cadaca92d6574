package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// stageChunk is the largest piece one staging buffer carries: a big upload
// (a weight tensor) goes through the two buffers in turns, so the host
// copies one chunk while the DMA engine moves the other, and pinned memory
// stays at most 2 × stageChunk however large the tensor.
const stageChunk = 16 << 20

// stager moves host data to and from the device through two page-locked
// buffers, each with an event that marks when the stream is done with it.
// Async copies need pinned memory to overlap anything (from pageable memory
// the driver copies synchronously through its own bounce buffer), and the
// event lets the host reuse a buffer without waiting for the whole stream.
type stager struct {
	dev  Device
	bufs [2]stageBuf
	next int // the buffer the next chunk goes through
}

type stageBuf struct {
	host  unsafe.Pointer // page-locked; nil until first used
	size  int
	done  Event // recorded after the last copy that used host
	inUse bool  // done was recorded and not yet waited for
}

// take returns buffer i holding at least bytes, once the stream has
// finished with its previous contents; it grows the buffer as needed.
func (s *stager) take(i, bytes int) (*stageBuf, error) {
	sb := &s.bufs[i]
	if err := s.settle(sb); err != nil {
		return nil, err
	}
	if sb.size >= bytes {
		return sb, nil
	}
	if sb.host != nil {
		if err := s.dev.HostFree(sb.host); err != nil {
			return nil, err
		}
		sb.host, sb.size = nil, 0
	}
	// Grow to the next power of two up to a chunk, so a run of growing
	// transfers reallocates a few times, not every time.
	size := min(sizeClass(bytes), stageChunk)
	p, err := s.dev.HostAlloc(size)
	if err != nil {
		return nil, fmt.Errorf("page-locked staging of %d bytes: %w", size, err)
	}
	if sb.done == 0 {
		if sb.done, err = s.dev.NewEvent(); err != nil {
			return nil, errors.Join(err, s.dev.HostFree(p))
		}
	}
	sb.host, sb.size = p, size
	return sb, nil
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
		sb, err := s.take(s.next, n)
		if err != nil {
			return err
		}
		s.next ^= 1
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
	finish := func(p *piece) error {
		if err := s.settle(p.sb); err != nil {
			return err
		}
		copy(unsafe.Slice((*byte)(unsafe.Add(dst, p.off)), p.n), unsafe.Slice((*byte)(p.sb.host), p.n))
		return nil
	}
	for off := 0; off < bytes; off += stageChunk {
		n := min(stageChunk, bytes-off)
		sb, err := s.take(s.next, n)
		if err != nil {
			return err
		}
		s.next ^= 1
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

// release waits for both buffers and frees them and their events.
func (s *stager) release() error {
	var errs []error
	for i := range s.bufs {
		sb := &s.bufs[i]
		errs = append(errs, s.settle(sb))
		if sb.host != nil {
			errs = append(errs, s.dev.HostFree(sb.host))
		}
		if sb.done != 0 {
			errs = append(errs, s.dev.DestroyEvent(sb.done))
		}
		*sb = stageBuf{}
	}
	return errors.Join(errs...)
}
