package estimate

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/kernels"
)

// Available is the memory a run may use on its device.
type Available struct {
	// Bytes is the free memory; meaningful only when Known.
	Bytes int64
	Known bool
	// Source says where the number came from, or why there is none.
	Source string
}

// FakeMemAvailableEnv is a test hook: when set (to a byte count, or a
// count with a K/M/G/T suffix in binary units), AvailableMemory reports it
// instead of asking the system, so tests can exercise the refusal path of
// grpo train without exhausting memory. It is not meant for users.
const FakeMemAvailableEnv = "GRPO_FAKE_MEMAVAILABLE"

// AvailableMemory reports the free memory of device: on a device whose
// backend uses host memory (kernels.Description.GPU false: cpu) the
// kernel's MemAvailable (/proc/meminfo, Linux only); on any other device
// what its backend reports through kernels.MemoryReporter (cuda:
// cuMemGetInfo; emu: the host's MemAvailable). The backend is opened for
// the question and closed again, so on cuda this costs a context and the
// PTX load once more (the driver caches the compiled kernels). A backend
// that is not in this binary, or cannot report, leaves the memory unknown
// and the run unchecked.
func AvailableMemory(device string) (Available, error) {
	if v := os.Getenv(FakeMemAvailableEnv); v != "" {
		n, err := parseBytes(v)
		if err != nil {
			return Available{}, fmt.Errorf("%s=%q: %v; want a byte count such as 8G", FakeMemAvailableEnv, v, err)
		}
		return Available{Bytes: n, Known: true, Source: FakeMemAvailableEnv}, nil
	}
	if d, ok := kernels.DescribeDevice(device); ok && !d.GPU {
		return memAvailable("/proc/meminfo")
	}
	return backendMemory(device), nil
}

// backendMemory asks device's backend for its free memory.
func backendMemory(device string) Available {
	be, err := kernels.Open(device)
	if err != nil {
		return Available{Source: fmt.Sprintf("free memory of device %q unknown: %v", device, err)}
	}
	if c, ok := be.(interface{ Close() error }); ok {
		defer c.Close()
	}
	r, ok := be.(kernels.MemoryReporter)
	if !ok {
		return Available{Source: fmt.Sprintf("the %s backend cannot report free memory", be.Name())}
	}
	free, total, err := r.MemInfo()
	if err != nil {
		return Available{Source: fmt.Sprintf("free memory of device %q unknown: %v", device, err)}
	}
	return Available{Bytes: free, Known: true, Source: fmt.Sprintf("free memory of the %s device, of %s in all", be.Name(), FormatBytes(total))}
}

// memAvailable reads MemAvailable from a meminfo file; a system without
// one (not Linux) has unknown free memory rather than an error.
func memAvailable(path string) (Available, error) {
	f, err := os.Open(path)
	if err != nil {
		return Available{Source: fmt.Sprintf("%s unreadable (%v); free memory unknown", path, err)}, nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return Available{}, fmt.Errorf("%s: MemAvailable line %q: want \"<n> kB\"", path, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb < 0 {
			return Available{}, fmt.Errorf("%s: MemAvailable %q is not a count of kB", path, fields[0])
		}
		return Available{Bytes: kb << 10, Known: true, Source: "MemAvailable in " + path}, nil
	}
	if err := sc.Err(); err != nil {
		return Available{}, fmt.Errorf("%s: %v", path, err)
	}
	return Available{Source: fmt.Sprintf("%s has no MemAvailable line (Linux before 3.14?); free memory unknown", path)}, nil
}

// parseBytes reads "123", "512M", "8G", "1.5T" (binary units).
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := 1.0
	if s != "" {
		switch strings.ToUpper(s[len(s)-1:]) {
		case "K":
			mult = 1 << 10
		case "M":
			mult = 1 << 20
		case "G":
			mult = 1 << 30
		case "T":
			mult = 1 << 40
		}
		if mult != 1 {
			s = s[:len(s)-1]
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0) || v*mult > 1<<62 {
		return 0, fmt.Errorf("not a byte count")
	}
	return int64(v * mult), nil
}

// Fits reports whether the estimate's peak fits in the available memory;
// ok is false when the free memory is unknown.
func (e *Estimate) Fits() (fits, ok bool) {
	if e.Available == nil || !e.Available.Known {
		return false, false
	}
	return e.Peak <= e.Available.Bytes, true
}

// Verdict is one line: whether the run fits, and what to lower if not.
func (e *Estimate) Verdict() string {
	fits, ok := e.Fits()
	switch {
	case !ok && e.Available != nil:
		return fmt.Sprintf("needs %s at peak (%s); cannot check: %s", FormatBytes(e.Peak), e.PeakPhase, e.Available.Source)
	case !ok:
		return fmt.Sprintf("needs %s at peak (%s); free memory not read", FormatBytes(e.Peak), e.PeakPhase)
	case fits:
		return fmt.Sprintf("fits: uses %s of %s available (%s)", FormatBytes(e.Peak), FormatBytes(e.Available.Bytes), e.Available.Source)
	}
	return fmt.Sprintf("does not fit: needs %s at peak (%s) but %s are available (%s); %s",
		FormatBytes(e.Peak), e.PeakPhase, FormatBytes(e.Available.Bytes), e.Available.Source, e.Advice())
}

// Advice names the settings that shrink the phase that sets the peak.
func (e *Estimate) Advice() string {
	switch e.PeakPhase {
	case PhaseSampling:
		return "lower batch_size or [sampling] max_tokens (the sampler's KV cache grows with both)"
	case PhaseTraining:
		if n := len(e.Recomputes); n > 0 && e.RecomputeSetting != e.Recomputes[n-1].Setting {
			least := e.Recomputes[n-1]
			return fmt.Sprintf("lower micro_batch_tokens or [sampling] max_tokens, or set recompute = %q (%s at peak)", least.Setting, FormatBytes(least.Peak))
		}
		return "lower micro_batch_tokens or [sampling] max_tokens"
	case PhaseEval:
		return "lower [eval] num_examples, rollouts_per_example or [eval.sampling] max_tokens"
	}
	return "use a smaller model, or a bf16 checkpoint on cuda"
}

// FormatBytes writes n in binary units: 512 B, 3.4 MiB, 12.1 GiB.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}
