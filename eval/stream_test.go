package eval

import (
	"reflect"
	"testing"

	"github.com/grpo-dev/grpo/sampler"
)

// TestEvalStreamsRowsByPass: with Options.Rows set, each pass's rows
// arrive as the pass ends — both when an example's rollouts are split
// (k 20 > batch 8) and when several examples share a pass (k 2, batch 4) —
// the result holds no trajectories, and the rows, concatenated, are exactly
// the rows of the same eval held in memory (same seeds, same order).
func TestEvalStreamsRowsByPass(t *testing.T) {
	m, tok, e := tinyReverseEval(t, 5)
	p := sampler.DefaultParams()
	p.MaxTokens = 3
	for _, c := range []struct{ n, k, batch, passes int }{{2, 20, 8, 6}, {5, 2, 4, 3}} {
		o := Options{NumExamples: c.n, RolloutsPerExample: c.k, Sampling: p, Seed: 7, PassThreshold: 0.01, Batch: c.batch}
		held, err := runKept(m, tok, e, "rev", o)
		if err != nil {
			t.Fatal(err)
		}
		var streamed []Row
		passes := 0
		o.Rows = func(rows []Row) error {
			passes++
			streamed = append(streamed, rows...)
			return nil
		}
		res, err := runKept(m, tok, e, "rev", o)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Trajectories) != 0 {
			t.Errorf("n %d k %d: the streamed result still holds %d trajectories", c.n, c.k, len(res.Trajectories))
		}
		if passes != c.passes {
			t.Errorf("n %d k %d batch %d: rows came in %d passes, want %d", c.n, c.k, c.batch, passes, c.passes)
		}
		if !reflect.DeepEqual(streamed, held.Rows()) {
			t.Errorf("n %d k %d: streamed rows differ from the rows held in memory", c.n, c.k)
		}
		if res.Reward != held.Reward || res.PassAt1 != held.PassAt1 || res.PassAtK != held.PassAtK || res.Rollouts != held.Rollouts {
			t.Errorf("n %d k %d: streamed summary %+v, held %+v", c.n, c.k, res, held)
		}
	}
}
