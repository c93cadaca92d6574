package kernels

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseDevices: lists and ranges read as the names say; a bare index
// continues the backend before it; mixed backends, duplicates, unknown
// names and malformed indices are refused naming the item.
func TestParseDevices(t *testing.T) {
	good := map[string]string{
		"cuda":            "[cuda:0]",
		"cuda:3":          "[cuda:3]",
		"cuda:0-3":        "[cuda:0 cuda:1 cuda:2 cuda:3]",
		"cuda:0, cuda:2":  "[cuda:0 cuda:2]",
		"cuda:0,2,5-6":    "[cuda:0 cuda:2 cuda:5 cuda:6]",
		"cpu:0-1":         "[cpu:0 cpu:1]",
		"cuda:6-7,cuda:0": "[cuda:6 cuda:7 cuda:0]",
	}
	for spec, want := range good {
		ids, err := ParseDevices(spec)
		if err != nil || fmt.Sprint(ids) != want {
			t.Errorf("ParseDevices(%q) = %v, %v; want %s", spec, ids, err, want)
		}
	}
	if ids, err := ParseDevices("cuda:0", "cuda:1-2"); err != nil || len(ids) != 3 {
		t.Errorf("two specs (a config list): %v, %v", ids, err)
	}
	bad := map[string]string{
		"cuda:0,cuda:0": "cuda:0 is named twice",
		"cuda:0-3,2":    "cuda:2 is named twice",
		"cuda:0,cpu:1":  `"cpu:1" after cuda devices: a run's devices are all of one backend`,
		"tpu:0":         `"tpu:0": unknown device "tpu"; want cpu or cuda`,
		"emu:0":         `unknown device "emu"`,
		"0-3":           `"0-3": name the backend first, e.g. "cuda:0-3"`,
		"cuda:3-1":      `"cuda:3-1": range "3-1": want N-M with N ≤ M`,
		"cuda:x":        `"cuda:x": index "x"`,
		"cuda:-1":       `"cuda:-1": index "-1"`,
		"":              "no device named",
	}
	for spec, want := range bad {
		_, err := ParseDevices(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDevices(%q): %v; want %q", spec, err, want)
		}
	}
}

// TestCheckDeviceCount: CUDA_VISIBLE_DEVICES bounds the indices (CUDA's
// reading: up to the first invalid entry); so does the backend's count
// once known; cpu replicas are not bounded.
func TestCheckDeviceCount(t *testing.T) {
	env := func(v string, set bool) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == "CUDA_VISIBLE_DEVICES" && set {
				return v, true
			}
			return "", false
		}
	}
	for v, want := range map[string]int{"2,3": 2, "GPU-8a1b,GPU-77c2,1": 3, "0,1,-1,2": 2, "": 0, "NoDevFiles": 0} {
		if got := VisibleCUDADevices(env(v, true)); got != want {
			t.Errorf("CUDA_VISIBLE_DEVICES=%q: %d visible, want %d", v, got, want)
		}
	}
	if got := VisibleCUDADevices(env("", false)); got != -1 {
		t.Errorf("unset: %d, want -1", got)
	}
	ids, _ := ParseDevices("cuda:0-2")
	if err := CheckDeviceCount(ids, -1, env("4,5", true)); err == nil || !strings.Contains(err.Error(), `cuda:2 is out of range: CUDA_VISIBLE_DEVICES="4,5" makes 2 device(s) visible, named cuda:0 to cuda:1`) {
		t.Errorf("visible 2: %v", err)
	}
	if err := CheckDeviceCount(ids, -1, env("", true)); err == nil || !strings.Contains(err.Error(), "makes no device visible") {
		t.Errorf("visible none: %v", err)
	}
	if err := CheckDeviceCount(ids, 2, env("", false)); err == nil || !strings.Contains(err.Error(), "cuda:2 is out of range: this machine has 2 GPU(s)") {
		t.Errorf("2 GPUs: %v", err)
	}
	if err := CheckDeviceCount(ids, 3, env("0,1,2,3", true)); err != nil {
		t.Errorf("3 of 4 visible: %v", err)
	}
	cpus, _ := ParseDevices("cpu:0-15")
	if err := CheckDeviceCount(cpus, -1, env("", true)); err != nil {
		t.Errorf("cpu replicas: %v", err)
	}
}

// namedBackend is a Backend whose name records how it was opened.
type namedBackend struct {
	Backend
	name string
}

func (b namedBackend) Name() string { return b.name }

// TestOpenDevice: "cuda:0" opens as "cuda" does, "cuda:2" through the
// backend's indexed constructor (checked against CUDA_VISIBLE_DEVICES
// first), "cpu:3" is another CPU backend; a list is refused.
func TestOpenDevice(t *testing.T) {
	registryMu.Lock()
	savedReg, savedIdx := registry, indexed
	registry = map[string]func() (Backend, error){}
	indexed = map[string]func(int) (Backend, error){}
	registryMu.Unlock()
	t.Cleanup(func() { registryMu.Lock(); registry, indexed = savedReg, savedIdx; registryMu.Unlock() })
	Register("cuda", func() (Backend, error) { return namedBackend{name: "cuda first"}, nil })
	Register("cpu", func() (Backend, error) { return namedBackend{name: "a cpu"}, nil })
	RegisterIndexed("cuda", func(i int) (Backend, error) { return namedBackend{name: fmt.Sprint("cuda ordinal ", i)}, nil })
	t.Setenv("CUDA_VISIBLE_DEVICES", "1,3,5")
	for name, want := range map[string]string{"cuda": "cuda first", "cuda:0": "cuda first", "cuda:2": "cuda ordinal 2", "cpu:3": "a cpu"} {
		b, err := Open(name)
		if err != nil || b.Name() != want {
			t.Errorf("Open(%q) = %v, %v; want %q", name, b, err, want)
		}
	}
	for name, want := range map[string]string{"cuda:3": "CUDA_VISIBLE_DEVICES", "cuda:0-1": "names 2 devices", "cuda:x": `index "x"`} {
		if _, err := Open(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q): %v; want %q", name, err, want)
		}
	}
}
