package curriculum

import (
	"slices"
	"testing"
)

// TestNextPassesOverPooled: with every other example set aside, Next hands
// out the drawable ones in the epoch's order, the cursor counting the
// passed-over ones too (it stops just past the last one drawn), and the next epoch reshuffles.
func TestNextPassesOverPooled(t *testing.T) {
	s, err := NewSchedule(3, []float64{1}, []int{6})
	if err != nil {
		t.Fatal(err)
	}
	all := s.Next(0, 12, nil)
	s.Cursors[0] = 0
	odd := func(_, i int) bool { return i%2 == 1 }
	got := s.Next(0, 6, odd)
	var want []int
	cursor := 0 // just past the last one drawn
	for k, i := range all {
		if i%2 == 1 {
			want, cursor = append(want, i), k+1
		}
	}
	if !slices.Equal(got, want) || s.Cursors[0] != cursor {
		t.Errorf("Next with pools = %v (cursor %d), want %v (cursor %d)", got, s.Cursors[0], want, cursor)
	}
	if slices.Equal(all[:6], all[6:]) {
		t.Errorf("epochs 0 and 1 share an order: %v", all)
	}
}

func TestPlayLimit(t *testing.T) {
	f := 1.5
	for _, c := range []struct {
		cfg  Config
		over *float64
		want int
	}{{Config{}, &f, 8}, {Config{OnlineDifficultyFiltering: true}, nil, 16}, {Config{OnlineDifficultyFiltering: true}, &f, 12}} {
		if got := c.cfg.PlayLimit(8, c.over); got != c.want {
			t.Errorf("%+v, %v: PlayLimit(8) = %d, want %d", c.cfg, c.over, got, c.want)
		}
	}
}
