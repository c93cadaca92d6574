package kerneltest

import "fmt"

// The scan's cases at the edges of dt = softplus(dtRaw + dtBias): large
// dt (the linear branch above 20 and the softplus just under it; the
// state decays by up to exp(−70) a token, so a chunk's running log-decay
// reaches thousands below zero and its exponentials underflow), tiny dt
// (≈ 1e-8 to 1e-5: the state keeps its start and barely moves) and both
// within one run. They run on the layouts whose runs cross chunks, with
// groups fewer than heads.

// ssmDt is the range dtRaw is drawn from, and the suffix it gives a
// case's name.
type ssmDt struct {
	name   string
	lo, hi float64
}

var ssmDtUsual = ssmDt{"", -2, 2}

var ssmDtEdges = []ssmDt{{",dt=large", 16, 26}, {",dt=tiny", -18, -12}, {",dt=large|tiny", -20, 20}}

// ssmDtLayouts name the layouts the edge cases run on.
var ssmDtLayouts = map[string]bool{"slot0→1,n=65": true, "fresh,n=200": true, "mixed": true}

// ssmDtCalls are the edge cases' calls. It panics if a layout it names
// is gone, so the cases cannot vanish with a rename.
func ssmDtCalls(backward bool) []ssmCall {
	var cs []ssmCall
	for _, l := range linearLayouts(backward) {
		if !ssmDtLayouts[l.name] {
			continue
		}
		for _, dt := range ssmDtEdges {
			cs = append(cs, ssmCall{l, ssmShapes[0], dt})
		}
	}
	if len(cs) != len(ssmDtLayouts)*len(ssmDtEdges) {
		panic(fmt.Sprintf("kerneltest: %d dt edge calls, want %d: a layout of ssmDtLayouts is gone", len(cs), len(ssmDtLayouts)*len(ssmDtEdges)))
	}
	return cs
}
