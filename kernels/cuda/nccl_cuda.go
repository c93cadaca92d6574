//go:build cuda

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <stddef.h>

// NCCL is opened at run time, as cuBLAS is (cublas_cuda.go): the binary
// neither needs it to start nor links a version of it. grpo_nccl_names is
// every entry point bound, in the order of grpo_nccl_fns; .ci/cuda-next.sh
// reads these strings out of the binaries and checks a real libnccl.so.2
// exports each. The signatures are nccl.h's (NCCL 2.12 and newer): enums
// and results are ints, ncclComm_t and cudaStream_t pointers, and
// ncclUniqueId a 128-byte struct passed by value.
static const char* grpo_nccl_names[] = {
	"ncclGetVersion", "ncclGetErrorString", "ncclGetUniqueId", "ncclCommInitRank",
	"ncclCommGetAsyncError", "ncclCommAbort", "ncclCommDestroy", "ncclAllReduce",
	"ncclGroupStart", "ncclGroupEnd", "ncclSend", "ncclRecv",
};
enum { GRPO_NCCL_NFNS = sizeof grpo_nccl_names / sizeof grpo_nccl_names[0] };
static void* grpo_nccl_fns[GRPO_NCCL_NFNS];

typedef struct { char internal[128]; } grpo_nccl_id;

// grpo_nccl_bind fills grpo_nccl_fns from lib, or returns the first name
// it lacks.
static const char* grpo_nccl_bind(void* lib) {
	for (int i = 0; i < GRPO_NCCL_NFNS; i++) {
		grpo_nccl_fns[i] = dlsym(lib, grpo_nccl_names[i]);
		if (!grpo_nccl_fns[i]) {
			return grpo_nccl_names[i];
		}
	}
	return 0;
}
static const char* grpo_nccl_open(const char* path, void** handle) {
	*handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	return *handle ? 0 : dlerror();
}
static int grpo_nccl_version(int* v) { return ((int (*)(int*))grpo_nccl_fns[0])(v); }
static const char* grpo_nccl_error_string(int r) { return ((const char* (*)(int))grpo_nccl_fns[1])(r); }
static int grpo_nccl_unique_id(grpo_nccl_id* id) { return ((int (*)(grpo_nccl_id*))grpo_nccl_fns[2])(id); }
static int grpo_nccl_init_rank(void** comm, int nranks, grpo_nccl_id* id, int rank) {
	return ((int (*)(void**, int, grpo_nccl_id, int))grpo_nccl_fns[3])(comm, nranks, *id, rank);
}
static int grpo_nccl_async_error(void* comm, int* r) { return ((int (*)(void*, int*))grpo_nccl_fns[4])(comm, r); }
static int grpo_nccl_abort(void* comm) { return ((int (*)(void*))grpo_nccl_fns[5])(comm); }
static int grpo_nccl_destroy(void* comm) { return ((int (*)(void*))grpo_nccl_fns[6])(comm); }
// Device addresses arrive as integers: they are not Go or host pointers.
static int grpo_nccl_all_reduce(unsigned long long send, unsigned long long recv, size_t count, int dtype, int op, void* comm, void* stream) {
	return ((int (*)(const void*, void*, size_t, int, int, void*, void*))grpo_nccl_fns[7])(
		(const void*)send, (void*)recv, count, dtype, op, comm, stream);
}
static int grpo_nccl_group_start(void) { return ((int (*)(void))grpo_nccl_fns[8])(); }
static int grpo_nccl_group_end(void) { return ((int (*)(void))grpo_nccl_fns[9])(); }
static int grpo_nccl_send(unsigned long long buf, size_t count, int dtype, int peer, void* comm, void* stream) {
	return ((int (*)(const void*, size_t, int, int, void*, void*))grpo_nccl_fns[10])((const void*)buf, count, dtype, peer, comm, stream);
}
static int grpo_nccl_recv(unsigned long long buf, size_t count, int dtype, int peer, void* comm, void* stream) {
	return ((int (*)(void*, size_t, int, int, void*, void*))grpo_nccl_fns[11])((void*)buf, count, dtype, peer, comm, stream);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

// The values of nccl.h's enums that the collectives use.
const (
	ncclInt32   = 2
	ncclFloat32 = 7
	// ncclBfloat16 (NCCL 2.10 on): sends and receives only move its 2
	// bytes an element.
	ncclBfloat16 = 9
	ncclSum      = 0
)

// NCCLUniqueIDBytes is the size of ncclUniqueId, what rank 0 hands every
// other rank before they form a communicator.
const NCCLUniqueIDBytes = 128

var (
	ncclOnce    sync.Once
	ncclPath    string
	ncclLoadErr error
)

// loadNCCL finds libnccl (libCandidates: GRPO_NCCL_LIB, LD_LIBRARY_PATH,
// the loader cache, the toolkit and pip-wheel directories, the bare
// sonames) and binds every entry point; once per process.
func loadNCCL() error {
	ncclOnce.Do(func() {
		ncclPath, ncclLoadErr = openFirst("NCCL ("+strings.Join(ncclNames, ", ")+"; pip install nvidia-nccl-cu12, or set "+ncclOverride+" to its file or directory)",
			osLibSearch().libCandidates(ncclOverride, ncclNames), func(p string) error {
				var h unsafe.Pointer
				cs := C.CString(p)
				defer C.free(unsafe.Pointer(cs))
				if msg := C.grpo_nccl_open(cs, &h); msg != nil {
					return errors.New(C.GoString(msg))
				}
				if missing := C.grpo_nccl_bind(h); missing != nil {
					C.dlclose(h)
					return errors.New("lacks " + C.GoString(missing) + " (NCCL 2.12 or newer is needed)")
				}
				return nil
			})
	})
	return ncclLoadErr
}

// NCCLPath returns the NCCL library loaded, or the error finding it.
func NCCLPath() (string, error) {
	err := loadNCCL()
	return ncclPath, err
}

// NCCLVersion returns ncclGetVersion's code (e.g. 22203 for 2.22.3).
func NCCLVersion() (int, error) {
	if err := loadNCCL(); err != nil {
		return 0, err
	}
	var v C.int
	if err := ncclCheck("ncclGetVersion", C.grpo_nccl_version(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// ncclCheck turns an ncclResult_t into an error named by
// ncclGetErrorString.
func ncclCheck(what string, r C.int) error {
	if r == ncclSuccess {
		return nil
	}
	name := ncclResultNames[int(r)]
	if name == "" {
		name = fmt.Sprintf("ncclResult %d", int(r))
	}
	return fmt.Errorf("nccl: %s: %s: %s", what, name, C.GoString(C.grpo_nccl_error_string(r)))
}

// NCCLUniqueID is ncclGetUniqueId: rank 0 calls it and hands the bytes to
// every rank (trainer/dist's rendezvous).
func NCCLUniqueID() ([NCCLUniqueIDBytes]byte, error) {
	var out [NCCLUniqueIDBytes]byte
	if err := loadNCCL(); err != nil {
		return out, err
	}
	var id C.grpo_nccl_id
	if err := ncclCheck("ncclGetUniqueId", C.grpo_nccl_unique_id(&id)); err != nil {
		return out, err
	}
	copy(out[:], unsafe.Slice((*byte)(unsafe.Pointer(&id.internal[0])), NCCLUniqueIDBytes))
	return out, nil
}

// The calls below are the communicator's (nccl_comm_cuda.go); those that
// touch a stream run on the device's owner thread, where its context is
// current.

func ncclInitRank(id [NCCLUniqueIDBytes]byte, rank, size int) (unsafe.Pointer, error) {
	var cid C.grpo_nccl_id
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&cid.internal[0])), NCCLUniqueIDBytes), id[:])
	var comm unsafe.Pointer
	err := ncclCheck(fmt.Sprintf("ncclCommInitRank(rank %d of %d)", rank, size), C.grpo_nccl_init_rank(&comm, C.int(size), &cid, C.int(rank)))
	return comm, err
}

// ncclAllReduceSumF32 is ncclAllReduce(ncclFloat32, ncclSum) of n floats
// from send into recv (the same address: in place) on stream.
func ncclAllReduceSumF32(what string, send, recv DevicePtr, n int, comm, stream unsafe.Pointer) error {
	return ncclCheck(what, C.grpo_nccl_all_reduce(C.ulonglong(send), C.ulonglong(recv), C.size_t(n), ncclFloat32, ncclSum, comm, stream))
}

// ncclSendRecv issues, as one NCCL group (ncclGroupStart/End), a send
// of sends[peer] elements of dtype (ncclFloat32, ncclInt32) from
// send[peer] and a receive of recvs[peer] into recv[peer] for each peer
// with a non-zero count, this rank itself included: the all-to-all of
// expert parallelism's token dispatch (AllToAll) and of its counts
// (ExchangeCounts).
func ncclSendRecv(dtype int, send, recv []DevicePtr, sends, recvs []int, comm, stream unsafe.Pointer) error {
	if err := ncclCheck("ncclGroupStart", C.grpo_nccl_group_start()); err != nil {
		return err
	}
	var first error
	for peer := range sends {
		if sends[peer] > 0 && first == nil {
			first = ncclCheck(fmt.Sprintf("ncclSend(%d elements to rank %d)", sends[peer], peer),
				C.grpo_nccl_send(C.ulonglong(send[peer]), C.size_t(sends[peer]), C.int(dtype), C.int(peer), comm, stream))
		}
		if recvs[peer] > 0 && first == nil {
			first = ncclCheck(fmt.Sprintf("ncclRecv(%d elements from rank %d)", recvs[peer], peer),
				C.grpo_nccl_recv(C.ulonglong(recv[peer]), C.size_t(recvs[peer]), C.int(dtype), C.int(peer), comm, stream))
		}
	}
	// The group is closed even after a failed call, or NCCL stays in
	// group mode for every later call.
	return errors.Join(first, ncclCheck("ncclGroupEnd", C.grpo_nccl_group_end()))
}

// ncclAsyncError is ncclCommGetAsyncError as an error, nil while the
// communicator is healthy; NCCL allows it from any thread.
func ncclAsyncError(comm unsafe.Pointer) error {
	var r C.int
	if err := ncclCheck("ncclCommGetAsyncError", C.grpo_nccl_async_error(comm, &r)); err != nil {
		return err
	}
	if ncclFailed(int(r)) {
		return ncclCheck("asynchronous error", r)
	}
	return nil
}

// ncclAbort is ncclCommAbort (from any thread: it ends the communicator's
// kernels however they are stuck).
func ncclAbort(comm unsafe.Pointer) error { return ncclCheck("ncclCommAbort", C.grpo_nccl_abort(comm)) }

func ncclDestroy(comm unsafe.Pointer) error {
	return ncclCheck("ncclCommDestroy", C.grpo_nccl_destroy(comm))
}
