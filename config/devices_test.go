package config

import (
	"strings"
	"testing"
)

// TestDevicesKey: devices = [...] resolves to its list (overriding the
// default device); no key is one device; a device written in the file
// must agree; duplicates, unknown names and indices past
// CUDA_VISIBLE_DEVICES are problems naming the key; a list of several is
// refused by SingleDevice in one line naming one to give, and taken by
// ValidateTrainDevices
// unless [inference] generates the rollouts.
func TestDevicesKey(t *testing.T) {
	const base = "model = \"Qwen/Qwen3-0.6B\"\nmax_steps = 1\nbatch_size = 8\nrollouts_per_example = 8\n[[env]]\nid = \"reverse-text\"\n"
	parse := func(extra string) (*Config, error) {
		return Parse([]byte(extra+base), "run.toml")
	}
	c, err := parse(`devices = ["cuda:0-1", "cuda:3"]` + "\n")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := c.DeviceList()
	if err != nil || len(ids) != 3 || ids[2].String() != "cuda:3" {
		t.Errorf("DeviceList = %v, %v", ids, err)
	}
	if _, err := c.SingleDevice(); err == nil || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), `devices = ["cuda:0-1", "cuda:3"] names 3 devices: this runs on one — name one device, e.g. cuda:0`) {
		t.Errorf("several devices: %v", err)
	}
	if ids, err := c.ValidateTrainDevices(); err != nil || len(ids) != 3 {
		t.Errorf("ValidateTrainDevices = %v, %v", ids, err)
	}
	c, err = Parse([]byte(`devices = ["cpu:0-1"]`+"\n"+base+"[inference]\nurl = \"http://localhost:8000/v1\"\n"), "run.toml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ValidateTrainDevices(); err == nil || !strings.Contains(err.Error(), "[inference] generates the rollouts on a server") {
		t.Errorf("several devices with [inference]: %v", err)
	}
	c, err = parse(`devices = ["cuda:2"]` + "\n")
	if d, err2 := c.SingleDevice(); err != nil || err2 != nil || d != "cuda:2" {
		t.Errorf("one device cuda:2: %q, %v, %v", d, err, err2)
	}
	c, err = parse("")
	if d, err2 := c.SingleDevice(); err != nil || err2 != nil || d != "cpu" {
		t.Errorf("no key: %q, %v, %v", d, err, err2)
	}
	t.Setenv("CUDA_VISIBLE_DEVICES", "4,5")
	for extra, want := range map[string]string{
		"device = \"cpu\"\ndevices = [\"cuda:0\"]\n": `devices = ["cuda:0"] names cuda devices but device = "cpu": drop device, or make the two agree`,
		"devices = [\"cuda:0,cuda:0\"]\n":            `devices = ["cuda:0,cuda:0"]: cuda:0 is named twice`,
		"devices = [\"gpu:0\"]\n":                    `unknown device "gpu"`,
		"devices = [\"cuda:2\"]\n":                   `cuda:2 is out of range: CUDA_VISIBLE_DEVICES="4,5" makes 2 device(s) visible`,
	} {
		_, err := parse(extra)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "devices") {
			t.Errorf("%q: %v; want %q", extra, err, want)
		}
	}
}

// TestAddEnv: an id no block names is appended with its weight, on a copy;
// a named one leaves the config as it is.
func TestAddEnv(t *testing.T) {
	c := DefaultConfig()
	c.Env = []Env{{ID: "gsm8k", Weight: 2}}
	got := c.AddEnv("wordle", 1)
	if len(got.Env) != 2 || got.Env[1].ID != "wordle" || got.Env[1].Weight != 1 || len(c.Env) != 1 {
		t.Errorf("added: %+v; original %+v", got.Env, c.Env)
	}
	if again := got.AddEnv("gsm8k", 1); again != got {
		t.Error("a named env was added again")
	}
}
