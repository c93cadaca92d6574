package eval

import (
	"context"
	"fmt"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/rollout"
)

// spreadEngine loads s's model (and adapter) on each of o.Devices, one
// kept sampler each, and spreads every pass over them (rollout.Spread).
func spreadEngine(ctx context.Context, s config.EvalSpec, o SpecOptions) (rollout.Engine, error) {
	engines := make(rollout.Spread, 0, len(o.Devices))
	for _, dev := range o.Devices {
		s.Device = dev
		m, tok, err := loadModel(ctx, s, o)
		if err != nil {
			release(engines)
			return nil, fmt.Errorf("eval %s: %s: %w", s.Name, dev, err)
		}
		engines = append(engines, rollout.NewKeptEngine(m, tok))
	}
	return engines, nil
}

// keptOf is the engine that holds device 0's model and sampler when eng
// plays on models loaded here, with the number of devices it spreads
// over; nil for an endpoint.
func keptOf(eng rollout.Engine) (*rollout.KeptEngine, int) {
	switch e := eng.(type) {
	case *rollout.KeptEngine:
		return e, 1
	case rollout.Spread:
		if k, ok := e[0].(*rollout.KeptEngine); ok {
			return k, len(e)
		}
	}
	return nil, 0
}

// release frees the samplers eng keeps.
func release(eng rollout.Engine) {
	switch e := eng.(type) {
	case *rollout.KeptEngine:
		e.Release()
	case rollout.Spread:
		for _, x := range e {
			release(x)
		}
	}
}
