package rollout

import (
	"context"
	"fmt"
	"time"

	"github.com/grpo-dev/grpo/env"
)

// playOverlapped is play with the environment's replies hidden behind the
// device's work. The episodes form two cohorts that take turns on the
// device: while one generates its turn, the other's replies run, and a
// cohort generates again only once all of its replies are in. New groups
// join the cohort about to generate while it is no larger than the other.
// Every Run's batch is thus fixed by the order of events, not by how long
// a reply takes, so the rollouts are the same on every run, and a resumed
// run samples what the first did. The price is two half batches a round
// instead of one whole: it pays when the replies take a good share of a
// turn (OverlapPays).
func (d *driver) playOverlapped(ctx context.Context, e env.Environment, queue []*episode) error {
	var cohorts [2][]*episode
	var replied [2]chan time.Duration // a cohort's replies in flight: their duration when done
	defer func() {
		for c := range cohorts {
			if replied[c] != nil {
				<-replied[c] // an episode is closed only after its Respond returned
			}
			for _, p := range cohorts[c] {
				d.end(p)
			}
		}
	}()
	for c := 0; ; c ^= 1 {
		if replied[c] != nil {
			d.respondTime += <-replied[c]
			replied[c] = nil
			cohorts[c] = d.continueAll(cohorts[c])
			if d.fatal != nil {
				return fmt.Errorf("rollouts: %w", d.fatal)
			}
		}
		queue = d.admit(e, queue, len(cohorts[0])+len(cohorts[1]),
			func() bool { return len(cohorts[c]) <= len(cohorts[c^1]) },
			func(g []*episode) { cohorts[c] = append(cohorts[c], g...) })
		if len(cohorts[c]) == 0 {
			if len(cohorts[c^1]) == 0 && replied[c^1] == nil {
				if len(queue) > 0 {
					return errCacheFull
				}
				return nil
			}
			continue // the other cohort's turn
		}
		var err error
		if cohorts[c], err = d.turn(ctx, cohorts[c]); err != nil {
			return err
		}
		done, eps := make(chan time.Duration, 1), cohorts[c]
		replied[c] = done
		go func() {
			t0 := time.Now()
			d.respondAll(ctx, eps)
			done <- time.Since(t0)
		}()
	}
}

// OverlapPays says whether a Play whose Timing was t would have gone
// faster with Options.Overlap: when the environment's replies took at
// least a quarter of the time spent generating, hiding them behind half
// batches gains more than the smaller batches cost (a decode step costs
// nearly as much at half the batch on a GPU), and at least
// overlapMinRespond, below which there is too little to hide to pay for
// the half batches, and the ratio is the scheduler's noise: a decision
// that flips on it makes a run's batches, so its log-probs' last bits,
// differ from one run to the next. The trainer decides each
// environment's next Play by its last one and checkpoints the decision,
// so a resumed run plays as the first did.
func OverlapPays(t Timing) bool {
	return t.Generate > 0 && t.Respond >= overlapMinRespond && 4*t.Respond >= t.Generate
}

// overlapMinRespond is the least reply time of a Play that overlapping
// may hide (OverlapPays).
const overlapMinRespond = 100 * time.Millisecond

// OverlapPlan says, per environment of a run, whether its next Play
// overlaps (On[k]): each step's decision comes from the environment's
// timing in the step before (OverlapPays). A run checkpoints On, so that
// a resumed run plays as the first did.
type OverlapPlan struct {
	On   []bool
	step []Timing // this step's, per environment
}

// NewOverlapPlan starts a plan for envs environments, none overlapped.
func NewOverlapPlan(envs int) *OverlapPlan {
	return &OverlapPlan{On: make([]bool, envs), step: make([]Timing, envs)}
}

// Record adds a Play of environment k to this step's timing.
func (o *OverlapPlan) Record(k int, t Timing) { o.step[k].Add(t) }

// Overlapped counts the environments that played overlapped this step.
func (o *OverlapPlan) Overlapped() int {
	n := 0
	for k, t := range o.step {
		if t.Generate > 0 && o.On[k] {
			n++
		}
	}
	return n
}

// Decide sets each environment that played this step to what its timing
// says pays, and starts the next step's timing.
func (o *OverlapPlan) Decide() {
	for k, t := range o.step {
		if t.Generate > 0 {
			o.On[k] = OverlapPays(t)
		}
		o.step[k] = Timing{}
	}
}
