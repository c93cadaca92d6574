package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/kernels"
)

// DeviceList resolves the run's devices: the `devices` key's list, or one
// device, `device`'s first. A `device` written in the file must agree with
// the list's backend; CUDA indices are checked against
// CUDA_VISIBLE_DEVICES (the driver's count is checked on opening).
func (c *Config) DeviceList() ([]kernels.DeviceID, error) {
	if len(c.Devices) == 0 {
		return []kernels.DeviceID{{Backend: c.Device}}, nil
	}
	ids, err := DevicesFromList("devices = "+quoteList(c.Devices), c.Devices...)
	if err != nil {
		return nil, err
	}
	if c.src != nil && c.src.Has("device") && c.Device != ids[0].Backend {
		return nil, fmt.Errorf("devices = %s names %s devices but device = %q: drop device, or make the two agree", quoteList(c.Devices), ids[0].Backend, c.Device)
	}
	return ids, nil
}

// DevicesFromList parses a device list given as what (`devices = [...]`,
// `--devices cuda:0-7`) and checks it against CUDA_VISIBLE_DEVICES; errors
// name what and the fix, in one line.
func DevicesFromList(what string, specs ...string) ([]kernels.DeviceID, error) {
	ids, err := kernels.ParseDevices(specs...)
	if err == nil {
		err = kernels.CheckDeviceCount(ids, -1, os.LookupEnv)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	return ids, nil
}

// SingleDevice is the one device a run that drives one device opens
// ("cuda", "cuda:3", "cpu"), or an error when the config names several:
// such a run must not silently use one of them.
func (c *Config) SingleDevice() (string, error) {
	ids, err := c.DeviceList()
	if err != nil {
		return "", err
	}
	return SingleDeviceOf(ids, "devices = "+quoteList(c.Devices))
}

// ValidateOneDevice is Validate, then SingleDevice: the check of a run
// that drives one device.
func (c *Config) ValidateOneDevice() (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	return c.SingleDevice()
}

// ValidateTrainDevices is Validate, then DeviceList: the check of a
// training run, which spreads over several devices data parallel. Several
// devices play their rollouts in process: with [inference] a server
// generates, and one device trains.
func (c *Config) ValidateTrainDevices() ([]kernels.DeviceID, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	ids, err := c.DeviceList()
	if err == nil && len(ids) > 1 && c.Inference.On() {
		err = fmt.Errorf("devices = %s names %d devices, but [inference] generates the rollouts on a server: data parallel training over several devices plays them in process; name one device, or drop [inference]", quoteList(c.Devices), len(ids))
	}
	return ids, err
}

// OpenName is the name a device is opened by (loader.OpenBackend): the
// backend for its first device ("cuda", "cpu"), else "cuda:3".
func OpenName(id kernels.DeviceID) string {
	if id.Index == 0 {
		return id.Backend
	}
	return id.String()
}

// SingleDeviceOf is SingleDevice for a list from elsewhere (a flag), named
// by what in the refusal.
func SingleDeviceOf(ids []kernels.DeviceID, what string) (string, error) {
	if len(ids) > 1 {
		return "", fmt.Errorf("%s names %d devices: this runs on one — name one device, e.g. %s", what, len(ids), ids[0])
	}
	return OpenName(ids[0]), nil
}

// DeviceNames are the devices a command that runs a copy of the model on
// each device opens (grpo eval, serve, bench --devices): --devices'
// devices by their open names ("cpu", "cpu:1", "cuda:3"), else device
// alone.
func DeviceNames(device, devicesFlag string) ([]string, error) {
	if devicesFlag == "" {
		return []string{device}, nil
	}
	ids, err := DevicesFromList("--devices "+devicesFlag, devicesFlag)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = OpenName(id)
	}
	return names, nil
}

// UseDevicesFlag makes grpo train's --devices flag's list the config's
// devices ("" leaves them); a malformed list is refused naming the flag.
func (c *Config) UseDevicesFlag(devicesFlag string) error {
	if devicesFlag != "" {
		if _, err := DevicesFromList("--devices "+devicesFlag, devicesFlag); err != nil {
			return err
		}
		c.Devices = []string{devicesFlag}
	}
	_, err := c.DeviceList()
	return err
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// checkExpertParallel is what expert_parallel = ep needs of a run's n
// devices ("" when it is fine): a degree that divides them (n / ep copies
// of each expert, EP × DP). The model's side (experts that split evenly)
// is checked when the run opens it.
func checkExpertParallel(ep, n int) string {
	switch {
	case ep < 0:
		return fmt.Sprintf("expert_parallel = %d: must be ≥ 0 (0: as grpo estimate plans; 1: data parallel; N: experts split over N devices)", ep)
	case ep <= 1:
		return ""
	case n == 1:
		return fmt.Sprintf("expert_parallel = %d but the run has one device: name %d devices (devices = [\"cuda:0-%d\"]), or drop expert_parallel", ep, ep, ep-1)
	case n%ep != 0:
		return fmt.Sprintf("expert_parallel = %d does not divide the run's %d devices: name a multiple of %d devices, or set expert_parallel = %d", ep, n, ep, n)
	}
	return ""
}
