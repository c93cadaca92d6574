package config

import (
	"strings"
	"testing"
)

// TestMaxAsyncLevel: max_async_level takes effect only with [inference]
// (AsyncLevel), and its warning keeps prime lab doctor's words while
// saying whether it is used; max_off_policy_steps is the same setting
// under prime-rl's name; a negative level, and the two keys disagreeing,
// are one line at the key with the fix.
func TestMaxAsyncLevel(t *testing.T) {
	const server = "\n[inference]\nurl = \"http://127.0.0.1:8000/v1\"\n"
	for _, tc := range []struct {
		text  string
		level int
		warn  string
	}{
		{minimalConfig, 0, ""},
		{"max_async_level = 2\n" + minimalConfig, 0, "r.toml:1: deprecated (prime lab doctor: `max_async_level` is outdated; remove it from Lab configs.); accepted and ignored locally because only a run with [inference]"},
		{"max_async_level = 2\n" + minimalConfig + server, 2, "r.toml:1: deprecated (prime lab doctor: `max_async_level` is outdated; remove it from Lab configs.); used here: rollouts are generated on the [inference] server while the trainer trains, each by a policy at most max_async_level = 2 optimiser step(s) behind the trainer's"},
		{"max_async_level = 0\n" + minimalConfig + server, 0, "accepted and ignored locally"},
		{"max_off_policy_steps = 3\n" + minimalConfig + server, 3, "r.toml:1: deprecated (prime lab doctor: `max_off_policy_steps` is outdated; remove it from Lab configs.); used here: rollouts are generated on the [inference] server while the trainer trains, each by a policy at most max_off_policy_steps = 3 optimiser step(s) behind the trainer's"},
		{"max_async_level = 1\n" + minimalConfig + server + "[buffer]\nonline_difficulty_filtering = true\n", 1, "used here"},
	} {
		c, err := Parse([]byte(tc.text), "r.toml")
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		if c.AsyncLevel() != tc.level {
			t.Errorf("%q: AsyncLevel %d, want %d", tc.text, c.AsyncLevel(), tc.level)
		}
		if got := strings.Join(c.Warnings, "\n"); !strings.Contains(got, tc.warn) || (tc.warn == "") != (got == "") {
			t.Errorf("%q: warnings %q, want %q", tc.text, got, tc.warn)
		}
	}
	for _, tc := range []struct{ text, want string }{
		{"max_async_level = -1\n" + minimalConfig + server, `r.toml:1:1: key "max_async_level": max_async_level = -1: want the steps a rollout's policy may lag the trainer's, ≥ 0`},
		{"max_async_level = 1\nmax_off_policy_steps = 2\n" + minimalConfig + server, `r.toml:2:1: key "max_off_policy_steps": max_off_policy_steps = 2 conflicts with max_async_level = 1; they are one setting`},
	} {
		_, err := Parse([]byte(tc.text), "r.toml")
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%q: %v\nwant one line containing %s", tc.text, err, tc.want)
		}
	}
}
