package kerneltest

import (
	"fmt"
	"math"
	"slices"

	"github.com/grpo-dev/grpo/kernels"
)

// The sigmoid-routing cases (GLM-4.5, DeepSeek-V3): group-limited top-k
// with and without a correction bias, replayed experts, renormalised and
// scaled weights, up to GLM-4.5's 160 experts top-8; the backward against
// the reference and finite differences; and two planted rows: the bias
// changes which experts are chosen but not their weights, and the group
// limit excludes an expert plain top-k would take.

type sigmoidRouteShape struct {
	routeShape
	groups, topKGroups int
}

var sigmoidRouteShapes = []sigmoidRouteShape{
	{routeShape{1, 2, 1}, 1, 1},
	{routeShape{7, 8, 2}, 4, 2},
	{routeShape{33, 16, 4}, 4, 2},
	{routeShape{5, 128, 8}, 8, 4},
	{routeShape{6, 160, 8}, 1, 1},
}

func (s sigmoidRouteShape) routing(norm bool) kernels.SigmoidRouting {
	scale := float32(1)
	if norm {
		scale = 2.5
	}
	return kernels.SigmoidRouting{Groups: s.groups, TopKGroups: s.topKGroups, NormTopK: norm, Scale: scale}
}

// routeBias returns a correction bias of up to ±0.05, equal at expert 1
// and the last, so routeLogits' planted tie stays one.
func (e *env) routeBias(nExperts int) []float32 {
	b := e.uniform(nExperts, 0.05)
	b[nExperts-1] = b[min(1, nExperts-1)]
	return b
}

func sigmoidRouteCases() []Case {
	var cs []Case
	for i, s := range sigmoidRouteShapes {
		for _, norm := range []bool{false, true} {
			for _, replay := range []bool{false, true} {
				for _, withBias := range []bool{false, true} {
					s, norm, replay, withBias, seed := s, norm, replay, withBias, uint64(5600+10*i)
					r := s.routing(norm)
					name := fmt.Sprintf("n=%d,experts=%d,k=%d,groups=%d/%d,norm=%v,replay=%v,bias=%v",
						s.n, s.experts, s.topK, s.topKGroups, s.groups, norm, replay, withBias)
					cs = append(cs, Case{Op: "MoERouteSigmoid", Name: name, check: func(b kernels.Backend) error {
						e := newEnv(b, seed)
						defer e.free()
						logits := e.in("logits", e.routeLogits(s.routeShape))
						var bias kernels.Buffer
						var bv []float64
						if withBias {
							o := e.in("bias", e.routeBias(s.experts))
							bias, bv = o.view, o.values()
						}
						w := e.out("weights", nans(s.n*s.topK))
						var ex *operand
						var rep []int32
						if replay {
							rep = e.routeExperts(s.routeShape)
							ex = e.ints("experts", rep)
						} else {
							ex = e.intsOut("experts", s.n*s.topK)
						}
						wantE, wantW := RefMoERouteSigmoid(logits.values(), bv, rep, s.n, s.experts, s.topK, r)
						b.MoERouteSigmoid(w.view, ex.view, logits.view, bias, s.n, s.experts, s.topK, r, replay)
						if err := e.checkAll(); err != nil {
							return err
						}
						if err := compareInts("experts", ex.intResult(b), wantE); err != nil {
							return err
						}
						return Compare("weights", w.result(b), wantW, tolReduction)
					}})
				}
			}
		}
	}
	return append(cs, sigmoidRoutePlantedCases()...)
}

// sigmoidRoutePlantedCases are the two bars of GLM-4.5's router, over 8
// experts in 4 groups of 2, top-2 from 2 groups, on one token whose
// sigmoid scores are, by expert, 0.9 0.1 | 0.8 0.7 | 0.6 0.55 | 0.2 0.15.
func sigmoidRoutePlantedCases() []Case {
	const n, ne, k = 1, 8, 2
	scores := []float64{0.9, 0.1, 0.8, 0.7, 0.6, 0.55, 0.2, 0.15}
	logits := make([]float32, ne)
	for i, p := range scores {
		logits[i] = float32(logit(p))
	}
	route := func(b kernels.Backend, bias []float32, r kernels.SigmoidRouting) ([]int32, []float32, error) {
		e := newEnv(b, 1)
		defer e.free()
		l := e.in("logits", logits)
		var bb kernels.Buffer
		if bias != nil {
			bb = e.in("bias", bias).view
		}
		w := e.out("weights", nans(n*k))
		ex := e.intsOut("experts", n*k)
		b.MoERouteSigmoid(w.view, ex.view, l.view, bb, n, ne, k, r, false)
		if err := e.checkAll(); err != nil {
			return nil, nil, err
		}
		return ex.intResult(b), w.result(b), nil
	}
	want := func(got, want []int32) error {
		if !slices.Equal(got, want) {
			return fmt.Errorf("experts %v, want %v", got, want)
		}
		return nil
	}
	// weightsOf is what the weights must be for experts: the un-biased
	// scores, renormalised and scaled.
	weightsOf := func(experts []int32, scale float64) []float64 {
		s := scores[experts[0]] + scores[experts[1]]
		return []float64{scale * scores[experts[0]] / s, scale * scores[experts[1]] / s}
	}
	grouped := kernels.SigmoidRouting{Groups: 4, TopKGroups: 2, NormTopK: true, Scale: 2.5}
	plain := kernels.SigmoidRouting{Groups: 1, TopKGroups: 1, NormTopK: true, Scale: 2.5}
	return []Case{
		// Group scores 1.0, 1.5, 1.15, 0.35: groups 1 and 2 stay, so expert
		// 0 (the best score, in group 0) is out; plain top-k takes it.
		{Op: "MoERouteSigmoid", Name: "planted,groups-exclude-best", check: func(b kernels.Backend) error {
			e, w, err := route(b, nil, grouped)
			if err != nil {
				return err
			}
			if err := want(e, []int32{2, 3}); err != nil {
				return fmt.Errorf("group-limited: %w", err)
			}
			if err := Compare("weights", w, weightsOf(e, 2.5), tolReduction); err != nil {
				return err
			}
			e, w, err = route(b, nil, plain)
			if err != nil {
				return err
			}
			if err := want(e, []int32{0, 2}); err != nil {
				return fmt.Errorf("plain top-k: %w", err)
			}
			return Compare("weights", w, weightsOf(e, 2.5), tolReduction)
		}},
		// A bias of +0.5 on expert 5 lifts group 2 to 1.65 and expert 5
		// to 1.05: it is chosen first, but weighs its un-biased 0.55.
		{Op: "MoERouteSigmoid", Name: "planted,bias-chooses-not-weighs", check: func(b kernels.Backend) error {
			bias := make([]float32, ne)
			bias[5] = 0.5
			e, w, err := route(b, bias, grouped)
			if err != nil {
				return err
			}
			if err := want(e, []int32{5, 2}); err != nil {
				return fmt.Errorf("biased: %w", err)
			}
			return Compare("weights", w, weightsOf(e, 2.5), tolReduction)
		}},
	}
}

func logit(p float64) float64 { return math.Log(p / (1 - p)) }

func sigmoidRouteBackwardCases() []Case {
	var cs []Case
	for i, s := range sigmoidRouteShapes {
		for _, norm := range []bool{false, true} {
			s, norm, seed := s, norm, uint64(5700+10*i)
			r := s.routing(norm)
			name := fmt.Sprintf("n=%d,experts=%d,k=%d,norm=%v", s.n, s.experts, s.topK, norm)
			run := func(b kernels.Backend, fd bool) error {
				e := newEnv(b, seed)
				defer e.free()
				logits := e.in("logits", e.routeLogits(s.routeShape))
				exps := e.routeExperts(s.routeShape)
				ex := e.ints("experts", exps)
				dw := e.in("dweights", e.uniform(s.n*s.topK, 1))
				dl := e.out("dlogits", nans(s.n*s.experts))
				b.MoERouteSigmoidBackward(dl.view, dw.view, logits.view, ex.view, s.n, s.experts, s.topK, r)
				if err := e.checkAll(); err != nil {
					return err
				}
				got := dl.result(b)
				if !fd {
					want := RefMoERouteSigmoidBackward(dw.values(), logits.values(), exps, s.n, s.experts, s.topK, r)
					return Compare("dlogits", got, want, tolReduction)
				}
				// Finite differences of L = Σ r·weights through the
				// replaying forward.
				w := e.out("weights", nans(s.n*s.topK))
				rw := dw.result(b)
				return checkFD(e, 1e-2, []fdInput{{op: logits, x: logits.result(b), grad: got}}, func() (float64, float64, error) {
					b.MoERouteSigmoid(w.view, ex.view, logits.view, nil, s.n, s.experts, s.topK, r, true)
					if err := b.Sync(); err != nil {
						return 0, 0, err
					}
					l, labs := dotLoss(rw, w.result(b))
					return l, labs, nil
				})
			}
			cs = append(cs, Case{Op: "MoERouteSigmoidBackward", Name: name, check: func(b kernels.Backend) error { return run(b, false) }})
			cs = append(cs, Case{Op: "MoERouteSigmoidBackward", Name: "fd," + name, check: func(b kernels.Backend) error { return run(b, true) }})
		}
	}
	return cs
}
