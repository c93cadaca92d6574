//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <stdlib.h>
#include <string.h>

// The primary context, not cuCtxCreate: its signature changed in CUDA 13
// (gorgonia.org/cu v0.9.6 still calls the old one), and the primary context
// is the one cuBLAS and any runtime-API library share.
static CUresult grpo_primary_ctx(int ordinal, CUdevice* dev, CUcontext* ctx) {
	CUresult r = cuDeviceGet(dev, ordinal);
	if (r != CUDA_SUCCESS) return r;
	r = cuDevicePrimaryCtxRetain(ctx, *dev);
	if (r != CUDA_SUCCESS) return r;
	return cuCtxSetCurrent(*ctx);
}
static CUresult grpo_primary_ctx_release(CUdevice dev) { return cuDevicePrimaryCtxRelease(dev); }
// Page-locked host memory for the staging buffers (gorgonia.org/cu wraps
// cuMemFreeHost but not cuMemHostAlloc). Flags 0: one context uses it.
static CUresult grpo_host_alloc(void** p, size_t bytes) { return cuMemHostAlloc(p, bytes, 0); }
// cuFuncSetAttribute is not wrapped by gorgonia.org/cu.
static CUresult grpo_set_max_dynamic_shared(CUfunction f, int bytes) {
	return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}
// Stream capture into CUDA graphs (not wrapped by gorgonia.org/cu).
// Thread-local mode: the owner thread is the only one that issues work.
// cuGraphInstantiateWithFlags has one signature in CUDA 11.4+ and 12.x
// (cuGraphInstantiate's changed between them).
static CUresult grpo_begin_capture(CUstream s) { return cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); }
static CUresult grpo_end_capture(CUstream s, CUgraphExec* exec) {
	CUgraph g = 0;
	CUresult r = cuStreamEndCapture(s, &g);
	if (r != CUDA_SUCCESS) return r;
	r = cuGraphInstantiateWithFlags(exec, g, 0);
	CUresult r2 = cuGraphDestroy(g);
	return r != CUDA_SUCCESS ? r : r2;
}
static CUresult grpo_graph_launch(CUgraphExec e, CUstream s) { return cuGraphLaunch(e, s); }
static CUresult grpo_graph_exec_destroy(CUgraphExec e) { return cuGraphExecDestroy(e); }
// cuEventQuery: CUDA_SUCCESS when done, CUDA_ERROR_NOT_READY while not.
static CUresult grpo_event_query(CUevent e) { return cuEventQuery(e); }
static int grpo_not_ready(CUresult r) { return r == CUDA_ERROR_NOT_READY; }
// The figures the GPU check's smoke step reports (smoke_test.go).
static CUresult grpo_device_facts(CUdevice dev, int* sms, int* optin, int* driver) {
	CUresult r = cuDeviceGetAttribute(sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
	if (r != CUDA_SUCCESS) return r;
	r = cuDeviceGetAttribute(optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
	if (r != CUDA_SUCCESS) return r;
	return cuDriverGetVersion(driver);
}
// A module from PTX through the driver's JIT, with its error log and the
// wall time it took (CU_JIT_WALL_TIME writes a float into its value slot).
static CUresult grpo_load_ptx(CUmodule* mod, const char* ptx, char* log, unsigned logSize, float* wallMs) {
	CUjit_option opts[3] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_WALL_TIME};
	void* vals[3] = {log, (void*)(size_t)logSize, 0};
	CUresult r = cuModuleLoadDataEx(mod, ptx, 3, opts, vals);
	memcpy(wallMs, &vals[2], sizeof(float));
	return r;
}
static CUresult grpo_load_cubin(CUmodule* mod, const void* image) { return cuModuleLoadData(mod, image); }
static const char* grpo_err(CUresult r) {
	const char* s = 0;
	cuGetErrorString(r, &s);
	return s ? s : "unknown CUDA error";
}
*/
import "C"

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
	"unsafe"

	"gorgonia.org/cu"
)

// driverDevice is a Device on a real GPU through the CUDA driver API
// (gorgonia.org/cu, plus the few calls above). A CUDA context is current on
// one OS thread, so one goroutine locked to its thread owns it and runs
// every call (owner.go): the calls that return nothing but an error —
// launches, GEMMs, device copies, memsets, event records, graph launches —
// are queued in batches, the others hand over the batch with themselves
// and wait.
// Every driver call's error is checked where it is made (cu.Ctx's batching
// methods, which overwrite earlier errors, are not used). Kernels, GEMMs
// and copies all go to one non-blocking stream that the owner created;
// the host waits only in WaitEvent, Sync, Free and Close.
type driverDevice struct {
	owner  *ownerThread
	dev    C.CUdevice
	stream cu.Stream
	fns    map[string]cu.Function
	// figs are the driver's own figures for each loaded kernel (its JIT's
	// registers, which may differ from ptxas 11.8's), optIn the dynamic
	// shared memory each kernel was opted into.
	figs  map[string]KernelFigures
	optIn map[string]int
	mods  []cu.Module
	// loadTimes is how long the driver took over each PTX module (its
	// JIT compile), in load order.
	loadTimes []moduleLoad
	blas      *cublas
	arch      string
	// events by handle (cu.Event's handle is unexported, so Event is an
	// index); only the owner goroutine touches the map.
	events    map[Event]cu.Event
	lastEvent Event
	syncEvent Event
	// graphs are the instantiated graphs by handle.
	graphs    map[Graph]C.CUgraphExec
	lastGraph Graph
}

// moduleLoad is how one kernel module was loaded: from its cubin, or
// from PTX by the driver's JIT (after the cubin was refused, why), and how
// long it took.
type moduleLoad struct {
	file      string
	cubin     bool
	cubinErr  string
	took, jit time.Duration
}

// deviceFacts are what the smoke step reports of the GPU: multiprocessors,
// the dynamic shared memory a kernel may opt into, the driver's CUDA
// version (e.g. 13000).
type deviceFacts struct{ SMs, SharedOptIn, Driver int }

func (d *driverDevice) facts() (deviceFacts, error) {
	var sms, optin, driver C.int
	err := d.do(func() error {
		return cuErr("device attributes", C.grpo_device_facts(d.dev, &sms, &optin, &driver))
	})
	return deviceFacts{int(sms), int(optin), int(driver)}, err
}

func cuErr(what string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return fmt.Errorf("cuda: %s: %s (CUresult %d)", what, C.GoString(C.grpo_err(r)), int(r))
}

// openDriver starts the owner goroutine, makes device ordinal's primary
// context current on it, creates the stream, loads the PTX for the GPU's
// architecture and opens cuBLAS.
func openDriver(ordinal int) (*driverDevice, error) {
	d := &driverDevice{fns: map[string]cu.Function{}, figs: map[string]KernelFigures{}, optIn: map[string]int{}, events: map[Event]cu.Event{}, graphs: map[Graph]C.CUgraphExec{}}
	o, err := startOwner(func() error { return d.setup(ordinal) })
	if err != nil {
		return nil, err
	}
	d.owner = o
	return d, nil
}

func (d *driverDevice) setup(ordinal int) error {
	var ctx C.CUcontext
	if err := cuErr("opening the primary context of device "+fmt.Sprint(ordinal), C.grpo_primary_ctx(C.int(ordinal), &d.dev, &ctx)); err != nil {
		return err
	}
	major, err := cu.Device(d.dev).Attribute(cu.ComputeCapabilityMajor)
	if err != nil {
		return fmt.Errorf("cuda: compute capability: %w", err)
	}
	switch {
	case major >= 9:
		d.arch = "sm90"
	case major == 8:
		d.arch = "sm80"
	default:
		return fmt.Errorf("cuda: GPU of compute capability %d.x; the kernels need 8.0 or newer (bf16)", major)
	}
	if d.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return fmt.Errorf("cuda: creating a stream: %w", err)
	}
	if err := d.loadPTX(); err != nil {
		return err
	}
	if d.syncEvent, err = d.newEvent(); err != nil {
		return err
	}
	d.blas, err = openCublas(unsafe.Pointer(d.stream.C()))
	return err
}

// loadPTX loads every kernel module for the GPU's architecture: its
// cubin where the driver takes it, else its PTX through the JIT, whose
// error log an error carries.
func (d *driverDevice) loadPTX() error {
	files, err := fs.Glob(ptxFiles, "ptx/*."+d.arch+".ptx")
	if err != nil || len(files) == 0 {
		return fmt.Errorf("cuda: no embedded PTX for %s (run make ptx)", d.arch)
	}
	for _, f := range files {
		src, err := ptxFiles.ReadFile(f)
		if err != nil {
			return err
		}
		mod, load, err := d.loadModule(f, src)
		if err != nil {
			return err
		}
		d.loadTimes = append(d.loadTimes, load)
		d.mods = append(d.mods, mod)
		for _, m := range ptxEntry.FindAllStringSubmatch(string(src), -1) {
			fn, err := mod.Function(m[1])
			if err != nil {
				return fmt.Errorf("cuda: kernel %s in %s: %w", m[1], f, err)
			}
			d.fns[m[1]] = fn
			if err := d.checkLoaded(m[1], fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadModule loads the cubin beside ptxFile when the driver takes it (a
// newer architecture than the cubin's does not), else the PTX itself.
func (d *driverDevice) loadModule(ptxFile string, ptx []byte) (cu.Module, moduleLoad, error) {
	load := moduleLoad{file: ptxFile}
	t0 := time.Now()
	if bin, err := ptxFiles.ReadFile(strings.TrimSuffix(ptxFile, ".ptx") + ".cubin"); err == nil {
		var mod C.CUmodule
		r := C.grpo_load_cubin(&mod, unsafe.Pointer(&bin[0]))
		if r == C.CUDA_SUCCESS {
			load.cubin, load.took = true, time.Since(t0)
			return *(*cu.Module)(unsafe.Pointer(&mod)), load, nil
		}
		load.cubinErr = cuErr("cuModuleLoadData(cubin)", r).Error()
	}
	cptx := C.CString(string(ptx))
	defer C.free(unsafe.Pointer(cptx))
	logBuf := make([]byte, 8192)
	var mod C.CUmodule
	var wallMs C.float
	r := C.grpo_load_ptx(&mod, cptx, (*C.char)(unsafe.Pointer(&logBuf[0])), C.uint(len(logBuf)), &wallMs)
	load.took, load.jit = time.Since(t0), time.Duration(float64(wallMs)*float64(time.Millisecond))
	if r != C.CUDA_SUCCESS {
		msg := strings.TrimRight(string(logBuf[:bytes.IndexByte(append(logBuf, 0), 0)]), "\n")
		return cu.Module{}, load, fmt.Errorf("cuda: loading %s (the driver's JIT, %v): %w; JIT log: %s", ptxFile, load.took.Round(time.Millisecond), cuErr("cuModuleLoadDataEx", r), msg)
	}
	return *(*cu.Module)(unsafe.Pointer(&mod)), load, nil
}

// checkLoaded reads what the driver's JIT made of a kernel and checks it
// against the largest block the backend launches it with (kernelMaxBlock),
// so a kernel the GPU cannot run at that size fails here, named, instead of
// as CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES in the middle of a run.
func (d *driverDevice) checkLoaded(name string, fn cu.Function) error {
	maxThreads, err := fn.Attribute(cu.FnMaxThreadsPerBlock)
	if err != nil {
		return fmt.Errorf("cuda: %s: CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: %w", name, err)
	}
	regs, err := fn.Attribute(cu.NumRegs)
	if err != nil {
		return fmt.Errorf("cuda: %s: CU_FUNC_ATTRIBUTE_NUM_REGS: %w", name, err)
	}
	static, err := fn.Attribute(cu.SharedSizeBytes)
	if err != nil {
		return fmt.Errorf("cuda: %s: CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: %w", name, err)
	}
	f := KernelFigures{Registers: regs, StaticShared: static, MaxThreads: maxThreads}
	d.figs[name] = f
	if want, ok := kernelMaxBlock[name]; ok && maxThreads < want {
		return fmt.Errorf("cuda: kernel %s: the driver allows blocks of at most %d threads (%d registers per thread after JIT), the backend launches up to %d",
			name, maxThreads, regs, want)
	}
	return nil
}

func (d *driverDevice) SetMaxDynamicShared(name string, bytes int) error {
	fn, ok := d.fns[name]
	if !ok {
		return fmt.Errorf("cuda: SetMaxDynamicShared: no kernel %s in the embedded PTX", name)
	}
	return d.do(func() error {
		// cu.Function is a struct holding only its CUfunction.
		cf := *(*C.CUfunction)(unsafe.Pointer(&fn))
		if err := cuErr(fmt.Sprintf("cuFuncSetAttribute(%s, MAX_DYNAMIC_SHARED_SIZE_BYTES, %d)", name, bytes), C.grpo_set_max_dynamic_shared(cf, C.int(bytes))); err != nil {
			return err
		}
		d.optIn[name] = bytes
		return nil
	})
}

// do runs the queued work and then f on the owner thread and returns
// their errors; queue adds f to the batch (ownerThread).
func (d *driverDevice) do(f func() error) error    { return d.owner.do(f) }
func (d *driverDevice) queue(f func() error) error { return d.owner.queue(f) }

func (d *driverDevice) Name() string { return "cuda" }

func (d *driverDevice) GPU() bool { return true }

func (d *driverDevice) Alloc(bytes int) (DevicePtr, error) {
	var p cu.DevicePtr
	err := d.do(func() error {
		var err error
		if p, err = cu.MemAlloc(int64(bytes)); err != nil {
			return fmt.Errorf("cuda: cuMemAlloc(%d bytes): %w", bytes, err)
		}
		if err = cu.MemsetD8Async(p, 0, int64(bytes), d.stream); err != nil {
			return errors.Join(fmt.Errorf("cuda: zeroing %d bytes: %w", bytes, err), cu.MemFree(p))
		}
		return nil
	})
	return DevicePtr(p), err
}

func (d *driverDevice) Free(p DevicePtr) error {
	return d.do(func() error {
		// cuMemFree does not wait for queued kernels that use p.
		if err := d.stream.Synchronize(); err != nil {
			return fmt.Errorf("cuda: synchronising before cuMemFree: %w", err)
		}
		return wrap("cuMemFree", cu.MemFree(cu.DevicePtr(p)))
	})
}

func wrap(what string, err error) error {
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", what, err)
	}
	return nil
}

func (d *driverDevice) HostAlloc(bytes int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := d.do(func() error {
		return cuErr(fmt.Sprintf("cuMemHostAlloc(%d bytes)", bytes), C.grpo_host_alloc(&p, C.size_t(bytes)))
	})
	return p, err
}

func (d *driverDevice) HostFree(p unsafe.Pointer) error {
	return d.do(func() error { return wrap("cuMemFreeHost", cu.MemFreeHost(p)) })
}

func (d *driverDevice) CopyHtoDAsync(dst DevicePtr, src unsafe.Pointer, bytes int) error {
	return d.do(func() error {
		return wrap(fmt.Sprintf("cuMemcpyHtoDAsync(%d bytes)", bytes), cu.MemcpyHtoDAsync(cu.DevicePtr(dst), src, int64(bytes), d.stream))
	})
}

func (d *driverDevice) CopyDtoHAsync(dst unsafe.Pointer, src DevicePtr, bytes int) error {
	return d.do(func() error {
		return wrap(fmt.Sprintf("cuMemcpyDtoHAsync(%d bytes)", bytes), cu.MemcpyDtoHAsync(dst, cu.DevicePtr(src), int64(bytes), d.stream))
	})
}

// newEvent runs on the owner thread. No timing: recording and waiting are
// cheaper without it.
func (d *driverDevice) newEvent() (Event, error) { return d.makeEvent(cu.DisableTiming) }

func (d *driverDevice) makeEvent(flags cu.EventFlags) (Event, error) {
	ev, err := cu.MakeEvent(flags)
	if err != nil {
		return 0, wrap("cuEventCreate", err)
	}
	d.lastEvent++
	d.events[d.lastEvent] = ev
	return d.lastEvent, nil
}

func (d *driverDevice) event(e Event) (cu.Event, error) {
	ev, ok := d.events[e]
	if !ok {
		return cu.Event{}, fmt.Errorf("cuda: event %d is not one of this device's", e)
	}
	return ev, nil
}

func (d *driverDevice) NewEvent() (Event, error) {
	var e Event
	err := d.do(func() error {
		var err error
		e, err = d.newEvent()
		return err
	})
	return e, err
}

// NewTimingEvent is an event with a timestamp (the profile's; the
// staging's and Sync's have none).
func (d *driverDevice) NewTimingEvent() (Event, error) {
	var e Event
	err := d.do(func() error {
		var err error
		e, err = d.makeEvent(cu.DefaultEvent)
		return err
	})
	return e, err
}

// Elapsed is cuEventElapsedTime: CUDA_ERROR_NOT_READY while either
// event's work is pending, CUDA_ERROR_INVALID_HANDLE for an event made
// without timing.
func (d *driverDevice) Elapsed(start, end Event) (float64, error) {
	var ms float64
	err := d.do(func() error {
		s, err := d.event(start)
		if err != nil {
			return err
		}
		e, err := d.event(end)
		if err != nil {
			return err
		}
		ms, err = s.Elapsed(e)
		return wrap("cuEventElapsedTime", err)
	})
	return ms, err
}

func (d *driverDevice) Record(e Event) error {
	return d.queue(func() error {
		ev, err := d.event(e)
		if err != nil {
			return err
		}
		return wrap("cuEventRecord", ev.Record(d.stream))
	})
}

// WaitEvent returns the error of any earlier asynchronous work that failed
// (a kernel fault is sticky and reported by the next synchronising call).
func (d *driverDevice) WaitEvent(e Event) error {
	return d.do(func() error {
		ev, err := d.event(e)
		if err != nil {
			return err
		}
		return wrap("cuEventSynchronize", ev.Synchronize())
	})
}

func (d *driverDevice) DestroyEvent(e Event) error {
	return d.do(func() error { return d.destroyEvent(e) })
}

func (d *driverDevice) destroyEvent(e Event) error {
	ev, err := d.event(e)
	if err != nil {
		return err
	}
	delete(d.events, e)
	return wrap("cuEventDestroy", cu.DestroyEvent(&ev))
}

// cstream is the stream's CUstream for the cgo calls above.
func (d *driverDevice) cstream() C.CUstream { return C.CUstream(unsafe.Pointer(d.stream.C())) }

func (d *driverDevice) Memset(p DevicePtr, bytes int) error {
	return d.queue(func() error {
		return wrap(fmt.Sprintf("cuMemsetD8Async(%d bytes)", bytes), cu.MemsetD8Async(cu.DevicePtr(p), 0, int64(bytes), d.stream))
	})
}

func (d *driverDevice) EventDone(e Event) (bool, error) {
	var done bool
	err := d.do(func() error {
		ev, err := d.event(e)
		if err != nil {
			return err
		}
		// cu.Event is a struct holding only its CUevent.
		r := C.grpo_event_query(*(*C.CUevent)(unsafe.Pointer(&ev)))
		if C.grpo_not_ready(r) != 0 {
			return nil
		}
		done = true
		return cuErr("cuEventQuery", r)
	})
	return done, err
}

func (d *driverDevice) BeginCapture() error {
	return d.do(func() error { return cuErr("cuStreamBeginCapture", C.grpo_begin_capture(d.cstream())) })
}

func (d *driverDevice) EndCapture() (Graph, error) {
	var g Graph
	err := d.do(func() error {
		var exec C.CUgraphExec
		if err := cuErr("cuStreamEndCapture + cuGraphInstantiateWithFlags", C.grpo_end_capture(d.cstream(), &exec)); err != nil {
			return err
		}
		d.lastGraph++
		d.graphs[d.lastGraph] = exec
		g = d.lastGraph
		return nil
	})
	return g, err
}

func (d *driverDevice) LaunchGraph(g Graph) error {
	return d.queue(func() error {
		exec, ok := d.graphs[g]
		if !ok {
			return fmt.Errorf("cuda: graph %d is not one of this device's", g)
		}
		return cuErr("cuGraphLaunch", C.grpo_graph_launch(exec, d.cstream()))
	})
}

func (d *driverDevice) DestroyGraph(g Graph) error {
	return d.do(func() error { return d.destroyGraph(g) })
}

func (d *driverDevice) destroyGraph(g Graph) error {
	exec, ok := d.graphs[g]
	if !ok {
		return fmt.Errorf("cuda: graph %d is not one of this device's", g)
	}
	delete(d.graphs, g)
	return cuErr("cuGraphExecDestroy", C.grpo_graph_exec_destroy(exec))
}

func (d *driverDevice) CopyDtoD(dst, src DevicePtr, bytes int) error {
	return d.queue(func() error {
		return wrap("cuMemcpyDtoDAsync", cu.MemcpyDtoDAsync(cu.DevicePtr(dst), cu.DevicePtr(src), int64(bytes), d.stream))
	})
}

func (d *driverDevice) Launch(name string, grid, block Dim3, sharedBytes int, args ...any) error {
	fn, ok := d.fns[name]
	if !ok {
		return fmt.Errorf("cuda: no kernel %s in the embedded PTX (run make ptx)", name)
	}
	// The JIT's figures, not ptxas 11.8's: what this GPU will check.
	if err := d.figs[name].CheckLaunch(name, int(block.X)*int(block.Y)*int(block.Z), sharedBytes, d.optIn[name]); err != nil {
		return fmt.Errorf("cuda: launching %w", err)
	}
	// cu's Launch copies 8 bytes from each parameter pointer; give each
	// argument an 8-byte slot holding its little-endian bytes.
	slots := make([]uint64, len(args))
	params := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		w, err := ArgWord(a)
		if err != nil {
			return fmt.Errorf("cuda: launching %s: argument %d: %w", name, i, err)
		}
		slots[i] = w
		params[i] = unsafe.Pointer(&slots[i])
	}
	return d.queue(func() error {
		err := fn.Launch(int(grid.X), int(grid.Y), int(grid.Z), int(block.X), int(block.Y), int(block.Z), sharedBytes, d.stream, params)
		if err != nil {
			return fmt.Errorf("cuda: launching %s grid %v block %v shared %d: %w", name, grid, block, sharedBytes, err)
		}
		return nil
	})
}

func (d *driverDevice) Sgemm(transA, transB bool, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int, beta float32, c DevicePtr, ldc int) error {
	return d.queue(func() error { return d.blas.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) })
}

func (d *driverDevice) GemmBF16(transA, transB bool, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int, beta float32, c DevicePtr, ldc int) error {
	return d.queue(func() error { return d.blas.gemmBF16(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) })
}

func (d *driverDevice) GemmBF16C(transA, transB bool, m, n, k int, alpha float32, a DevicePtr, lda int, b DevicePtr, ldb int, beta float32, c DevicePtr, ldc int) error {
	return d.queue(func() error { return d.blas.gemmBF16C(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) })
}

// MemInfo is cuMemGetInfo in the backend's context: free and total bytes
// of the GPU, other processes' allocations counted as used.
func (d *driverDevice) MemInfo() (free, total int64, err error) {
	err = d.do(func() error {
		var e error
		free, total, e = cu.MemInfo()
		return wrap("cuMemGetInfo", e)
	})
	return free, total, err
}

// Sync records an event after all issued work and waits for it: the
// first error of that work (a kernel fault, a failed copy) comes back here.
func (d *driverDevice) Sync() error {
	return d.do(func() error {
		ev, err := d.event(d.syncEvent)
		if err != nil {
			return err
		}
		return errors.Join(wrap("cuEventRecord", ev.Record(d.stream)), wrap("cuEventSynchronize", ev.Synchronize()))
	})
}

func (d *driverDevice) Close() error {
	err := d.do(func() error {
		var errs []error
		errs = append(errs, wrap("cuStreamSynchronize", d.stream.Synchronize()))
		if d.blas != nil {
			errs = append(errs, d.blas.close())
		}
		for e := range d.events {
			errs = append(errs, d.destroyEvent(e))
		}
		for g := range d.graphs {
			errs = append(errs, d.destroyGraph(g))
		}
		for _, m := range d.mods {
			errs = append(errs, wrap("cuModuleUnload", m.Unload()))
		}
		errs = append(errs, wrap("cuStreamDestroy", d.stream.Destroy()))
		errs = append(errs, cuErr("releasing the primary context", C.grpo_primary_ctx_release(d.dev)))
		return errors.Join(errs...)
	})
	return errors.Join(err, d.owner.stop())
}
