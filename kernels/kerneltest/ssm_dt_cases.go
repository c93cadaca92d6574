package kerneltest

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

// ssmDtCalls are the edge cases' calls.
func ssmDtCalls(backward bool) []ssmCall {
	var cs []ssmCall
	for _, l := range linearLayouts(backward) {
		if l.name != "slot0→1,n=65" && l.name != "fresh,n=200" && l.name != "mixed" {
			continue
		}
		for _, dt := range ssmDtEdges {
			cs = append(cs, ssmCall{l, ssmShapes[0], dt})
		}
	}
	return cs
}
