package kernels

import (
	"fmt"
	"strconv"
	"strings"
)

// DeviceID names one device of a run: a backend and its index ("cuda:3").
// CUDA indices count the devices CUDA_VISIBLE_DEVICES leaves visible, as
// the driver numbers them; cpu indices name replicas of the CPU backend
// (several in one process, for multi-replica runs on any machine).
type DeviceID struct {
	Backend string
	Index   int
}

func (d DeviceID) String() string { return d.Backend + ":" + strconv.Itoa(d.Index) }

// ParseDevices reads a device list: each spec holds comma-separated items,
// "cuda" (cuda:0), "cuda:3", "cuda:0-7", or a bare "N" / "N-M" that
// continues the previous item's backend ("cuda:0,2,4-5"). The devices are
// all of one backend and each is named once. Errors say what is wrong with
// which item; the caller names the key or flag.
func ParseDevices(specs ...string) ([]DeviceID, error) {
	var out []DeviceID
	seen := map[DeviceID]bool{}
	backend := ""
	for _, spec := range specs {
		for _, item := range strings.Split(spec, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				if strings.TrimSpace(spec) == "" {
					continue // an empty list: reported below
				}
				return nil, fmt.Errorf("%q: an empty item", spec)
			}
			name, idx, hasIdx := strings.Cut(item, ":")
			if !hasIdx && (item[0] >= '0' && item[0] <= '9') {
				if backend == "" {
					return nil, fmt.Errorf("%q: name the backend first, e.g. \"cuda:%s\"", item, item)
				}
				name, idx, hasIdx = backend, item, true
			}
			if _, ok := DescribeDevice(name); !ok {
				return nil, fmt.Errorf("%q: unknown device %q; want %s, e.g. \"cuda:0-7\"", item, name, strings.Join(Devices(), " or "))
			}
			if backend != "" && name != backend {
				return nil, fmt.Errorf("%q after %s devices: a run's devices are all of one backend", item, backend)
			}
			backend = name
			lo, hi := 0, 0
			if hasIdx {
				var err error
				if lo, hi, err = indexRange(idx); err != nil {
					return nil, fmt.Errorf("%q: %v", item, err)
				}
			}
			for i := lo; i <= hi; i++ {
				id := DeviceID{name, i}
				if seen[id] {
					return nil, fmt.Errorf("%s is named twice", id)
				}
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no device named; e.g. \"cuda:0\" or \"cuda:0-7\"")
	}
	return out, nil
}

// indexRange reads "N" or "N-M" (N ≤ M).
func indexRange(s string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = strconv.Atoi(a); err != nil || lo < 0 {
		return 0, 0, fmt.Errorf("index %q: want a whole number ≥ 0 or a range N-M", s)
	}
	if !isRange {
		return lo, lo, nil
	}
	if hi, err = strconv.Atoi(b); err != nil || hi < lo {
		return 0, 0, fmt.Errorf("range %q: want N-M with N ≤ M", s)
	}
	return lo, hi, nil
}

// VisibleCUDADevices is how many devices CUDA_VISIBLE_DEVICES leaves
// visible, or -1 when it is unset (then the driver's count decides). CUDA
// reads the list up to its first entry that is not an index or a GPU-/MIG-
// UUID, so "0,1,-1,2" shows two.
func VisibleCUDADevices(lookup func(string) (string, bool)) int {
	v, ok := lookup("CUDA_VISIBLE_DEVICES")
	if !ok {
		return -1
	}
	n := 0
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if i, err := strconv.Atoi(e); (err != nil || i < 0) && !strings.HasPrefix(e, "GPU-") && !strings.HasPrefix(e, "MIG-") {
			break
		}
		n++
	}
	return n
}

// CheckDeviceCount refuses a device past the visible ones: available is
// how many the backend has (-1: not known yet, only CUDA_VISIBLE_DEVICES
// limits). cpu replicas have no bound.
func CheckDeviceCount(ids []DeviceID, available int, lookup func(string) (string, bool)) error {
	for _, id := range ids {
		if id.Backend != "cuda" {
			continue
		}
		if vis := VisibleCUDADevices(lookup); vis >= 0 && id.Index >= vis {
			v, _ := lookup("CUDA_VISIBLE_DEVICES")
			if vis == 0 {
				return fmt.Errorf("%s is out of range: CUDA_VISIBLE_DEVICES=%q makes no device visible; unset it or name GPUs in it", id, v)
			}
			return fmt.Errorf("%s is out of range: CUDA_VISIBLE_DEVICES=%q makes %d device(s) visible, named cuda:0 to cuda:%d (the names count the visible devices)", id, v, vis, vis-1)
		}
		if available >= 0 && id.Index >= available {
			return fmt.Errorf("%s is out of range: this machine has %d GPU(s), cuda:0 to cuda:%d", id, available, available-1)
		}
	}
	return nil
}
