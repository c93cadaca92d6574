package config

import (
	"strings"
	"testing"
)

const bufferBase = `model = "Qwen/Qwen3-0.6B"
batch_size = 8
rollouts_per_example = 2
[[env]]
id = "reverse-text"
[[env]]
id = "alphabet-sort"
`

// TestBufferSection: [buffer] parses into the curriculum's settings,
// env_ratios become the envs' weights (and conflict with a weight that
// differs), oversampling_factor is reported as used only under online
// difficulty filtering, and bad values are located errors.
func TestBufferSection(t *testing.T) {
	c, err := Parse([]byte("oversampling_factor = 1.5\n"+bufferBase+`[buffer]
online_difficulty_filtering = true
easy_threshold = 0.8
hard_threshold = 0.2
easy_fraction = 0.1
env_ratios = [3, 1]
seed = 5
`), "f.toml")
	if err != nil {
		t.Fatal(err)
	}
	b := c.Buffer
	if !b.OnlineDifficultyFiltering || *b.EasyThreshold != 0.8 || *b.HardThreshold != 0.2 || b.EasyFraction != 0.1 || *b.Seed != 5 {
		t.Errorf("buffer %+v", b)
	}
	if c.Env[0].Weight != 3 || c.Env[1].Weight != 1 {
		t.Errorf("weights %v, %v, want env_ratios 3, 1", c.Env[0].Weight, c.Env[1].Weight)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "f.toml:1: deprecated") || !strings.Contains(c.Warnings[0], "used here") {
		t.Errorf("warnings %q, want oversampling_factor reported as used", c.Warnings)
	}

	c, err = Parse([]byte("oversampling_factor = 2.0\n"+bufferBase), "f.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "accepted and ignored locally because without [buffer] online_difficulty_filtering") {
		t.Errorf("warnings %q, want oversampling_factor ignored without filtering", c.Warnings)
	}

	for _, tc := range []struct{ text, want string }{
		{"[buffer]\nenv_ratios = [1]\n", "f.toml:9:1: key \"buffer.env_ratios\": [buffer] env_ratios has 1 shares for 2 [[env]] blocks"},
		{"[buffer]\neasy_threshold = 0.1\nhard_threshold = 0.3\n", "easy_threshold = 0.1 is not above hard_threshold = 0.3"},
		{"[buffer]\neasy_fraction = 2.0\n", "f.toml:9:1: [buffer] easy_fraction = 2: want a fraction"},
		{"[buffer]\neasy_treshold = 0.9\n", "easy_treshold"},
		{"[buffer]\nonline_difficulty_filtering = true\n", ""},
	} {
		text := bufferBase + tc.text
		if tc.want == "" {
			text, tc.want = "oversampling_factor = 0.5\n"+text, "oversampling_factor = 0.5: want a bound in [1, 64]"
		}
		_, err := Parse([]byte(text), "f.toml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.text, err, tc.want)
		}
	}
	// A weight written in [[env]] that env_ratios contradicts.
	_, err = Parse([]byte(strings.Replace(bufferBase, `id = "alphabet-sort"`, "id = \"alphabet-sort\"\nweight = 2", 1)+"[buffer]\nenv_ratios = [1, 1]\n"), "f.toml")
	if err == nil || !strings.Contains(err.Error(), "env_ratios[1] = 1 conflicts with weight = 2") {
		t.Errorf("conflicting weight: %v", err)
	}
}
