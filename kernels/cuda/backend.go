package cuda

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/grpo-dev/grpo/kernels"
)

// Backend implements kernels.Backend over a Device. Like a CUDA stream, it
// is meant to be driven by one goroutine at a time.
type Backend struct {
	dev *Counter // the device, counted
	err error    // first error since the last Sync
	// pending is set when work was issued that no wait has covered yet:
	// a Sync right after a download (which waited for everything) does not
	// wait again.
	pending bool
	pool    pool
	stage   stager
	// capturing is the open graph capture (graph.go), nil when none.
	capturing *capture
	// optIn is the dynamic shared memory each kernel has been opted into
	// beyond the default (Device.SetMaxDynamicShared).
	optIn map[string]int
	// attnPath is the forward attention kernel SetAttentionPath chose.
	attnPath AttentionPath
	// ssdPath is the scan's kernels SetSSDPath chose.
	ssdPath SSDPath
	// host are the host's copies of I32 values it uploaded (positions.go).
	host hostI32
	// traffic is the open count of operand bytes (CountTraffic), nil when
	// none.
	traffic Traffic
}

var _ kernels.Backend = (*Backend)(nil)

// New returns a backend that runs every op on dev, through a Counter
// (Counts).
func New(dev Device) *Backend {
	c := NewCounter(dev)
	b := &Backend{dev: c}
	b.pool.dev = c
	b.stage.dev = c
	return b
}

// Counts is what the backend has asked of its device so far.
func (b *Backend) Counts() Counts { return b.dev.Counts() }

// Launched is how many times the backend launched kernel name so far
// (Counter.Launched).
func (b *Backend) Launched(name string) int64 { return b.dev.Launched(name) }

// TagWeights marks the memory of bufs as weights, so the GEMMs that read
// them add to Counts.WeightBytes. Freeing a buffer clears its tag.
func (b *Backend) TagWeights(bufs ...kernels.Buffer) {
	for _, x := range bufs {
		if bx := b.buf("TagWeights", "buffer", x, 0, kernels.F32, kernels.BF16, kernels.I32); bx.ptr != 0 {
			b.dev.tagWeights(bx.ptr, bx.bytes())
		}
	}
}

// Name is the device's name ("cuda" or "emu").
func (b *Backend) Name() string { return b.dev.Name() }

// Describe: on either device BF16 buffers stay bf16 and MatMul with bf16
// weights is a bf16 GEMM (GemmBF16), and graphs capture on either (graph.go);
// the device says whether it is a GPU.
func (b *Backend) Describe() kernels.Description {
	return kernels.Description{Name: b.Name(), GPU: b.dev.GPU(), BF16Storage: kernels.BF16, BF16GEMM: true, KVCache: kernels.BF16, Graphs: true}
}

// Device returns the device the backend runs on (the one New was given).
func (b *Backend) Device() Device { return b.dev.Inner() }

// fail queues err for the next Sync; the first one wins.
func (b *Backend) fail(err error) {
	if err != nil && b.err == nil {
		b.err = err
	}
}

// Sync waits for the device and returns the first error since the last
// Sync.
func (b *Backend) Sync() error {
	if b.pending {
		b.fail(b.dev.Sync())
		b.pending = false
	}
	err := b.err
	b.err = nil
	return err
}

// Close frees the scratch pool and the staging buffers and releases the
// device. Buffers still allocated are released with it.
func (b *Backend) Close() error {
	return errors.Join(b.stage.release(), b.pool.release(), b.dev.Close())
}

// upload copies host memory to the device through the staging buffers;
// src may be reused as soon as it returns.
func (b *Backend) upload(dst DevicePtr, src unsafe.Pointer, bytes int) {
	b.pending = true
	b.fail(b.stage.upload(dst, src, bytes))
}

// download copies device memory to the host after all work issued so far.
// Once it returns without error every issued op has completed: the last
// wait was for an event recorded after all of them.
func (b *Backend) download(dst unsafe.Pointer, src DevicePtr, bytes int) {
	err := b.stage.download(dst, src, bytes)
	b.fail(err)
	if err == nil {
		b.pending = false
	}
}

// buf checks that x is a live buffer of this backend with at least n
// elements of one of dts, and returns it; shape mistakes panic naming op.
func (b *Backend) buf(op, name string, x kernels.Buffer, n int, dts ...kernels.DType) *buffer {
	bx, ok := x.(*buffer)
	if !ok || bx == nil || bx.owner != b {
		panic(fmt.Sprintf("cuda: %s: %s is not a buffer of this %s backend", op, name, b.Name()))
	}
	okType := false
	for _, dt := range dts {
		okType = okType || bx.dt == dt
	}
	if !okType {
		panic(fmt.Sprintf("cuda: %s: %s has dtype %v, want one of %v", op, name, bx.dt, dts))
	}
	if bx.n < n {
		panic(fmt.Sprintf("cuda: %s: %s has %d elements, the shape needs %d", op, name, bx.n, n))
	}
	if b.traffic != nil {
		b.operandTraffic(op, name, bx, n)
	}
	return bx
}

// optBuf is buf for an optional output: nil gives address 0, which the
// kernels test for.
func (b *Backend) optBuf(op, name string, x kernels.Buffer, n int) *buffer {
	if x == nil {
		return &buffer{owner: b}
	}
	return b.buf(op, name, x, n, kernels.F32)
}

// usable reports whether all operands hold memory; a failed Alloc already
// queued its error.
func usable(xs ...*buffer) bool {
	for _, x := range xs {
		if x.bad {
			return false
		}
	}
	return true
}

// launch runs a kernel and queues its error. A block larger than the
// kernel's entry in kernelMaxBlock (its __launch_bounds__) is refused here,
// naming the kernel; a kernel whose shared memory exceeds the 48 KiB a
// block gets by default is opted into what this launch needs first.
func (b *Backend) launch(name string, grid, block Dim3, shared int, args ...any) {
	max, ok := kernelMaxBlock[name]
	threads := int(block.X) * int(block.Y) * int(block.Z)
	if !ok || threads > max {
		b.fail(fmt.Errorf("%s: launching %s with a block of %d threads: its __launch_bounds__ (kernelMaxBlock in launch.go) is %d", b.Name(), name, threads, max))
		return
	}
	f, _ := Figures(name)
	if f.StaticShared+shared > DefaultSharedPerBlock && b.optIn[name] < shared {
		if err := b.dev.SetMaxDynamicShared(name, shared); err != nil {
			b.fail(err)
			return
		}
		if b.optIn == nil {
			b.optIn = map[string]int{}
		}
		b.optIn[name] = shared
	}
	b.pending = true
	b.fail(b.dev.Launch(name, grid, block, shared, args...))
}

func (b *Backend) Alloc(dt kernels.DType, n int) kernels.Buffer {
	if n < 0 {
		panic(fmt.Sprintf("cuda: Alloc(%v, %d)", dt, n))
	}
	x := &buffer{owner: b, n: n, dt: dt, root: true}
	if n == 0 {
		return x
	}
	if b.capturing != nil {
		b.fail(fmt.Errorf("%s: Alloc(%v, %d) while capturing a graph: allocate every buffer the graph uses before BeginCapture", b.Name(), dt, n))
		x.bad = true
		return x
	}
	p, fresh, err := b.pool.get(n * dt.Size())
	if err != nil {
		b.fail(fmt.Errorf("%s: allocating %d × %v: %w", b.Name(), n, dt, err))
		x.bad = true
		return x
	}
	if !fresh {
		// Recycled memory: zero it in stream order, after its last user.
		b.pending = true
		b.fail(b.dev.Memset(p, n*dt.Size()))
	}
	x.ptr = p
	return x
}

func (b *Backend) Free(x kernels.Buffer) {
	bx := b.buf("Free", "buffer", x, 0, kernels.F32, kernels.BF16, kernels.I32, kernels.U8)
	if !bx.root {
		panic("cuda: Free of a view (Slice); free its parent")
	}
	if bx.ptr != 0 && b.capturing != nil {
		b.fail(fmt.Errorf("%s: Free while capturing a graph: the graph may still use the buffer", b.Name()))
		return
	}
	if bx.ptr != 0 {
		// Back to the pool: later work reuses it in stream order, with no
		// cuMemFree and so no wait for the stream.
		b.dev.untag(bx.ptr)
		if bx.dt == kernels.I32 {
			b.host.drop(bx.ptr, bx.ptr+DevicePtr(bx.bytes()))
		}
		b.fail(b.pool.put(bx.ptr, bx.bytes()))
		bx.ptr, bx.bad = 0, true
	}
}

func (b *Backend) Upload(dst kernels.Buffer, src []float32) {
	d := b.buf("Upload", "dst", dst, len(src), kernels.F32, kernels.BF16)
	if d.n != len(src) {
		panic(fmt.Sprintf("cuda: Upload of %d values into a buffer of %d", len(src), d.n))
	}
	if len(src) == 0 || !usable(d) {
		return
	}
	if d.dt == kernels.F32 {
		b.upload(d.ptr, unsafe.Pointer(&src[0]), d.bytes())
		return
	}
	// BF16: stage as f32 and round on the device (f32_to_bf16), so the
	// rounding is the kernels' own.
	tmp, ok := b.scratch(4 * len(src))
	if !ok {
		return
	}
	defer b.putScratch(tmp, 4*len(src))
	b.upload(tmp, unsafe.Pointer(&src[0]), 4*len(src))
	b.elementwise("f32_to_bf16", len(src), d.ptr, tmp, int32(len(src)))
}

func (b *Backend) UploadBF16(dst kernels.Buffer, src []uint16) {
	d := b.buf("UploadBF16", "dst", dst, len(src), kernels.F32, kernels.BF16)
	if d.n != len(src) {
		panic(fmt.Sprintf("cuda: UploadBF16 of %d values into a buffer of %d", len(src), d.n))
	}
	if len(src) == 0 || !usable(d) {
		return
	}
	if d.dt == kernels.BF16 {
		b.upload(d.ptr, unsafe.Pointer(&src[0]), d.bytes())
		return
	}
	tmp, ok := b.scratch(2 * len(src))
	if !ok {
		return
	}
	defer b.putScratch(tmp, 2*len(src))
	b.upload(tmp, unsafe.Pointer(&src[0]), 2*len(src))
	b.elementwise("bf16_to_f32", len(src), d.ptr, tmp, int32(len(src)))
}

func (b *Backend) UploadI32(dst kernels.Buffer, src []int32) {
	d := b.buf("UploadI32", "dst", dst, len(src), kernels.I32)
	if d.n != len(src) {
		panic(fmt.Sprintf("cuda: UploadI32 of %d values into a buffer of %d", len(src), d.n))
	}
	if len(src) == 0 || !usable(d) {
		return
	}
	b.upload(d.ptr, unsafe.Pointer(&src[0]), d.bytes())
	b.keepUploaded(d.ptr, src)
}

func (b *Backend) UploadU8(dst kernels.Buffer, src []byte) {
	d := b.buf("UploadU8", "dst", dst, len(src), kernels.U8)
	if d.n != len(src) {
		panic(fmt.Sprintf("cuda: UploadU8 of %d bytes into a buffer of %d", len(src), d.n))
	}
	if len(src) == 0 || !usable(d) {
		return
	}
	b.upload(d.ptr, unsafe.Pointer(&src[0]), d.bytes())
}

func (b *Backend) Download(dst []float32, src kernels.Buffer) {
	s := b.buf("Download", "src", src, len(dst), kernels.F32, kernels.BF16)
	if s.n != len(dst) {
		panic(fmt.Sprintf("cuda: Download of a buffer of %d into %d values", s.n, len(dst)))
	}
	if len(dst) == 0 || !usable(s) {
		return
	}
	if s.dt == kernels.F32 {
		b.download(unsafe.Pointer(&dst[0]), s.ptr, s.bytes())
		return
	}
	tmp, ok := b.scratch(4 * len(dst))
	if !ok {
		return
	}
	defer b.putScratch(tmp, 4*len(dst))
	b.elementwise("bf16_to_f32", len(dst), tmp, s.ptr, int32(len(dst)))
	b.download(unsafe.Pointer(&dst[0]), tmp, 4*len(dst))
}

func (b *Backend) DownloadI32(dst []int32, src kernels.Buffer) {
	s := b.buf("DownloadI32", "src", src, len(dst), kernels.I32)
	if s.n != len(dst) {
		panic(fmt.Sprintf("cuda: DownloadI32 of a buffer of %d into %d values", s.n, len(dst)))
	}
	if len(dst) == 0 || !usable(s) {
		return
	}
	b.download(unsafe.Pointer(&dst[0]), s.ptr, s.bytes())
}

func (b *Backend) Copy(dst, src kernels.Buffer) {
	s := b.buf("Copy", "src", src, 0, kernels.F32, kernels.BF16, kernels.I32, kernels.U8)
	d := b.buf("Copy", "dst", dst, s.n, s.dt)
	if d.n != s.n {
		panic(fmt.Sprintf("cuda: Copy of %d elements into %d", s.n, d.n))
	}
	if s.n == 0 || !usable(s, d) {
		return
	}
	b.pending = true
	b.fail(b.dev.CopyDtoD(d.ptr, s.ptr, s.bytes()))
}

// scratch takes at least bytes of temporary device memory (not zeroed)
// from the pool; putScratch gives it back.
func (b *Backend) scratch(bytes int) (DevicePtr, bool) {
	if b.capturing != nil {
		return b.captureScratch(sizeClass(bytes))
	}
	p, _, err := b.pool.get(sizeClass(bytes))
	if err != nil {
		b.fail(fmt.Errorf("%s: scratch of %d bytes: %w", b.Name(), bytes, err))
		return 0, false
	}
	return p, true
}

func (b *Backend) putScratch(p DevicePtr, bytes int) {
	if c := b.capturing; c != nil {
		c.free[sizeClass(bytes)] = append(c.free[sizeClass(bytes)], p)
		return
	}
	b.fail(b.pool.put(p, sizeClass(bytes)))
}
