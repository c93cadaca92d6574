package cuda

import (
	"errors"
	"strings"
	"testing"
)

// TestReplayWatches: watches registered while capturing (a captured
// collective's, watchReplays) run after every replay of the graph, once
// per communicator however many of its collectives the graph holds, not
// at capture; a watch's error surfaces at the next Sync; a freed graph
// keeps none.
func TestReplayWatches(t *testing.T) {
	b := New(NewNullDevice())
	calls := map[string]int{}
	fail := false
	watch := func(who string) func() error {
		return func() error {
			calls[who]++
			if fail && who == "b" {
				return errors.New("peer 1 left")
			}
			return nil
		}
	}
	if err := b.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	b.watchReplays("a", watch("a"))
	b.watchReplays("a", watch("a")) // a second collective on the same communicator
	b.watchReplays("b", watch("b"))
	g, err := b.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 0 {
		t.Fatalf("watches ran at capture: %v", calls)
	}
	for range 3 {
		b.Replay(g)
	}
	if calls["a"] != 3 || calls["b"] != 3 {
		t.Errorf("after 3 replays the watches ran %v times; want 3 each", calls)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	fail = true
	b.Replay(g)
	if err := b.Sync(); err == nil || !strings.Contains(err.Error(), "peer 1 left") {
		t.Errorf("Sync after a replay whose watch failed: %v; want its error", err)
	}
	b.FreeGraph(g)
	if gg := g.(*graph); gg.watch != nil {
		t.Error("a freed graph keeps its watches")
	}
}
