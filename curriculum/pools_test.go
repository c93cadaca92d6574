package curriculum

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func f(v float64) *float64 { return &v }

// TestObservePoolsAndFilters walks one step of two environments through
// every case prime-rl's Buffer.update distinguishes: a mean at or past
// each threshold is pooled (easy first), a mean of exactly 0 or 1 is
// dropped by online difficulty filtering whatever the thresholds, and the
// metrics are the step's shares under prime-rl's names.
func TestObservePoolsAndFilters(t *testing.T) {
	p := New(Config{OnlineDifficultyFiltering: true, EasyThreshold: f(0.75), HardThreshold: f(0.25)}, []int{4, 2})
	cases := []struct {
		e, i    int
		rewards []float32
		train   bool
		pool    Pool
	}{
		{0, 0, []float32{1, 1}, false, Easy},      // all succeed: easy, dropped
		{0, 1, []float32{1, 0.5}, true, Easy},     // mean 0.75 = threshold: easy, trained
		{0, 2, []float32{0.5, 0.5}, true, Normal}, // equal rewards but not 0/1: kept (the zero-advantage filter is loss's)
		{0, 3, []float32{0, 0}, false, Hard},      // all fail: hard, dropped
		{1, 0, []float32{0.25, 0.25}, true, Hard}, // at the hard threshold
		{1, 1, []float32{0, 1}, true, Normal},
	}
	for _, c := range cases {
		if got := p.Observe(c.e, c.i, c.rewards); got != c.train {
			t.Errorf("Observe(%d, %d, %v) = %v, want %v", c.e, c.i, c.rewards, got, c.train)
		}
		if got := p.Drawable(c.e, c.i); got != (c.pool == Normal) {
			t.Errorf("example %d/%d drawable = %v, want pool %v", c.e, c.i, got, c.pool)
		}
	}
	if p.DrawableCount(0) != 1 || p.DrawableCount(1) != 1 {
		t.Errorf("drawable counts %d, %d, want 1, 1", p.DrawableCount(0), p.DrawableCount(1))
	}
	want := map[string]float64{
		"evicted_examples/easy": 2.0 / 6, "evicted_examples/hard": 2.0 / 6,
		"filtered_rollouts/easy": 2.0 / 12, "filtered_rollouts/hard": 2.0 / 12,
		"pool/easy": 2.0 / 6, "pool/hard": 2.0 / 6, "pool/normal": 2.0 / 6,
	}
	if got := p.Metrics(); !reflect.DeepEqual(got, want) {
		t.Errorf("metrics\n got %v\nwant %v", got, want)
	}
	// The next step starts its counts afresh; the pools stay.
	if got := p.Metrics(); len(got) != 3 || got["pool/easy"] != 2.0/6 {
		t.Errorf("second step's metrics %v, want the pools' shares only", got)
	}
}

// TestFilterOnlyKeepsNoPools: online difficulty filtering without
// thresholds drops groups but sets no example aside, and reports no pool
// metrics.
func TestFilterOnlyKeepsNoPools(t *testing.T) {
	p := New(Config{OnlineDifficultyFiltering: true}, []int{3})
	if p.Observe(0, 0, []float32{1, 1, 1}) || !p.Drawable(0, 0) {
		t.Error("an all-success group must be dropped and its example stay drawable")
	}
	m := p.Metrics()
	if _, ok := m["pool/easy"]; ok || m["filtered_rollouts/easy"] != 1 {
		t.Errorf("metrics %v", m)
	}
}

// TestRestoreReturnsFractions: a checkpoint's pools come back, then
// round-half-even(len × fraction) of each pool returns to the drawn
// examples, the same ones for the same seed.
func TestRestoreReturnsFractions(t *testing.T) {
	cfg := Config{EasyThreshold: f(0.9), HardThreshold: f(0.1), EasyFraction: 0.5, HardFraction: 0}
	src := New(cfg, []int{10})
	for i := range 5 {
		src.Observe(0, i, []float32{1})
	}
	for i := 5; i < 8; i++ {
		src.Observe(0, i, []float32{0})
	}
	st := src.State()
	if !reflect.DeepEqual(st, &State{Easy: [][]int{{0, 1, 2, 3, 4}}, Hard: [][]int{{5, 6, 7}}}) {
		t.Fatalf("state %+v", st)
	}
	var back [2][]int
	for k := range back {
		p := New(cfg, []int{10})
		if err := p.Restore(st, 7, 3); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if p.Drawable(0, i) {
				back[k] = append(back[k], i)
			}
		}
	}
	// 8, 9 were never pooled; round(5 × 0.5) = 2 easy ones return; no hard.
	if len(back[0]) != 4 || back[0][2] != 8 || back[0][3] != 9 || !reflect.DeepEqual(back[0], back[1]) {
		t.Errorf("drawable after restore %v and %v, want 2 of 0..4 then 8, 9, equal", back[0], back[1])
	}
	for _, i := range back[0][:2] {
		if i > 4 {
			t.Errorf("example %d returned; only easy ones may", i)
		}
	}
}

func TestRestoreRefusesForeignState(t *testing.T) {
	p := New(Config{EasyThreshold: f(1)}, []int{4})
	for _, c := range []struct {
		st   *State
		want string
	}{
		{&State{Easy: [][]int{{}, {}}, Hard: [][]int{{}, {}}}, "2/2 environments"},
		{&State{Easy: [][]int{{4}}, Hard: [][]int{{}}}, "split changed"},
		{&State{Easy: [][]int{{1}}, Hard: [][]int{{1}}}, "twice"},
	} {
		if err := p.Restore(c.st, 1, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Restore(%+v) = %v, want %q", c.st, err, c.want)
		}
	}
}

func TestConfigProblems(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{EasyThreshold: f(0.2), HardThreshold: f(0.5)}, "not above hard_threshold"},
		{Config{EasyThreshold: f(math.NaN())}, "easy_threshold = NaN"},
		{Config{HardFraction: 1.5}, "hard_fraction = 1.5"},
		{Config{EnvRatios: []float64{0, 0}}, "env_ratios sum to 0"},
		{Config{EnvRatios: []float64{-1, 2}}, "env_ratios[0] = -1"},
	} {
		ps := c.cfg.Problems()
		if len(ps) != 1 || !strings.Contains(ps[0].Error(), c.want) {
			t.Errorf("%+v: problems %v, want one with %q", c.cfg, ps, c.want)
		}
	}
	if ps := (Config{EasyThreshold: f(0.9), HardThreshold: f(0.1), EasyFraction: 0.1, EnvRatios: []float64{1, 0}}).Problems(); ps != nil {
		t.Errorf("a valid config: %v", ps)
	}
}
