package config

import (
	"strings"
	"testing"
)

// TestCheckpointDirStaysInRunDir: a [checkpoint] dir that leaves the run
// directory ("..") or is absolute is an error at its line, naming the value
// and the fix; a nested relative dir is fine.
func TestCheckpointDirStaysInRunDir(t *testing.T) {
	cases := map[string]string{
		`"../../x"`:     `run.toml:10:1: [checkpoint] dir = "../../x": leaves the run directory through ".."`,
		`"a/../../x"`:   `run.toml:10:1: [checkpoint] dir = "a/../../x": leaves the run directory`,
		`"/tmp/ck"`:     `run.toml:10:1: [checkpoint] dir = "/tmp/ck": an absolute path`,
		`'..\..\x'`:     `leaves the run directory`,
		`"ck/nested"`:   "",
		`"./ck/../ck2"`: "",
	}
	for dir, want := range cases {
		doc := minimalConfig + "\n[checkpoint]\ndir = " + dir + "\n"
		_, err := Parse([]byte(doc), "run.toml")
		switch {
		case want == "" && err != nil:
			t.Errorf("dir = %s: %v", dir, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `e.g. dir = "checkpoints"`)):
			t.Errorf("dir = %s: got %v, want %q and the fix", dir, err, want)
		}
	}
}

// TestMaxErrorSteps: the key defaults to 3 and rejects negatives at its line.
func TestMaxErrorSteps(t *testing.T) {
	c, err := Parse([]byte(minimalConfig), "run.toml")
	if err != nil || c.MaxErrorSteps != 3 {
		t.Fatalf("default: %v, %+v", err, c)
	}
	_, err = Parse([]byte("max_error_steps = -1\n"+minimalConfig), "run.toml")
	if err == nil || !strings.Contains(err.Error(), "run.toml:1:1: max_error_steps = -1: must be ≥ 0") {
		t.Errorf("got %v", err)
	}
}
