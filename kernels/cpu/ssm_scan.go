package cpu

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// The Mamba-2 scan (kernels.SSMOps) as its recurrence, token by token in
// f32. The forward runs (run, head) pairs in parallel: they share no
// output. The backward runs (run, group) pairs, so that B's and C's
// gradients, summed over a group's heads, have one writer; the initial
// states' gradients, which runs sharing an init slot sum, are added in run
// order after the parallel part. xBC, y, dy and dxBC may be BF16: a BF16
// y is rounded once at its store, a BF16 dxBC once a (run, group) task
// has summed its heads into it (where the GPU's ssd_group_sum rounds).

// ssmDims are a scan call's sizes.
type ssmDims struct{ nHeads, headDim, nGroups, dState int }

func (s ssmDims) width() int     { return s.nHeads*s.headDim + 2*s.nGroups*s.dState }
func (s ssmDims) headState() int { return s.headDim * s.dState }
func (s ssmDims) group(h int) int {
	return h / (s.nHeads / s.nGroups)
}
func (s ssmDims) bOff(g int) int { return s.nHeads*s.headDim + g*s.dState }
func (s ssmDims) cOff(g int) int { return s.nHeads*s.headDim + (s.nGroups+g)*s.dState }

func ssmShape(op string, s ssmDims) {
	positive(op, s.nHeads, s.headDim, s.nGroups, s.dState)
	if s.nHeads%s.nGroups != 0 {
		panic(fmt.Sprintf("cpu.%s: nHeads %d not a multiple of nGroups %d", op, s.nHeads, s.nGroups))
	}
}

// ssmDt is softplus(raw + bias) and its derivative, in float64 rounded
// once.
func ssmDt(raw, bias float32) (dt, grad float32) {
	x := float64(raw) + float64(bias)
	if x > 20 {
		return float32(x), 1
	}
	return float32(math.Log1p(math.Exp(x))), float32(sigmoid64(x))
}

// ssmStep advances one head's state S by one token: S ← a·S + dt·x ⊗ B.
func ssmStep(st, x, b []float32, a, dt float32, dState int) {
	for p, xp := range x {
		row, w := st[p*dState:(p+1)*dState], dt*xp
		for n, bn := range b {
			row[n] = a*row[n] + w*bn
		}
	}
}

func (be *Backend) SSDScan(y, xBC, dtRaw, aLog, dtBias, d, state, runs kernels.Buffer, nRuns, nTok, nHeads, headDim, nGroups, stateSize int) {
	const op = "SSDScan"
	s := ssmDims{nHeads, headDim, nGroups, stateSize}
	ssmShape(op, s)
	hs := s.headState()
	rs, slots := linearRuns(op, runs, nRuns, nTok, state, nHeads*hs)
	ys, ybf := floatsOut(op, "y", y, nTok*nHeads*headDim)
	xs := floats(op, "xBC", xBC, nTok*s.width())
	dts := f32(op, "dtRaw", dtRaw, nTok*nHeads)
	al, db, ds := f32(op, "aLog", aLog, nHeads), f32(op, "dtBias", dtBias, nHeads), f32(op, "d", d, nHeads)
	var st []float32
	if slots > 0 {
		st = f32(op, "state", state, slots*nHeads*hs)
	}
	w := s.width()
	be.parallel(nRuns*nHeads, maxCount(rs)*2*hs, func(lo, hi int) {
		S := make([]float32, hs)
		for i := lo; i < hi; i++ {
			r, h := rs[i/nHeads], i%nHeads
			g := s.group(h)
			if init := stateOf(st, r.init, nHeads*hs); init != nil {
				copy(S, init[h*hs:(h+1)*hs])
			} else {
				clear(S)
			}
			A := float32(-math.Exp(float64(al[h])))
			for t := r.first; t < r.first+r.count; t++ {
				row := xs[t*w : (t+1)*w]
				x := row[h*headDim : (h+1)*headDim]
				dt, _ := ssmDt(dts[t*nHeads+h], db[h])
				ssmStep(S, x, row[s.bOff(g):s.bOff(g)+stateSize], float32(math.Exp(float64(dt*A))), dt, stateSize)
				c, out := row[s.cOff(g):s.cOff(g)+stateSize], ys[(t*nHeads+h)*headDim:(t*nHeads+h+1)*headDim]
				for p := range headDim {
					var acc float32
					for n, cn := range c {
						acc += S[p*stateSize+n] * cn
					}
					out[p] = roundIf(ybf, acc+ds[h]*x[p])
				}
			}
			// After every run read its init state (runs in other tasks
			// never read this slot; this run read it above).
			if fin := stateOf(st, r.final, nHeads*hs); fin != nil {
				copy(fin[h*hs:(h+1)*hs], S)
			}
		}
	})
}

func (be *Backend) SSDScanBackward(dxBC, ddtRaw, dState, dy, xBC, dtRaw, aLog, dtBias, d, state, runs kernels.Buffer, nRuns, nTok, nHeads, headDim, nGroups, stateSize int) {
	const op = "SSDScanBackward"
	s := ssmDims{nHeads, headDim, nGroups, stateSize}
	ssmShape(op, s)
	hs, w, per := s.headState(), s.width(), nHeads*s.headState()
	rs, slots := linearRuns(op, runs, nRuns, nTok, state, per)
	dxs, dxbf := floatsOut(op, "dxBC", dxBC, nTok*w)
	ddts := f32(op, "ddtRaw", ddtRaw, nTok*nHeads)
	dys := floats(op, "dy", dy, nTok*nHeads*headDim)
	xs := floats(op, "xBC", xBC, nTok*w)
	dts := f32(op, "dtRaw", dtRaw, nTok*nHeads)
	al, db, ds := f32(op, "aLog", aLog, nHeads), f32(op, "dtBias", dtBias, nHeads), f32(op, "d", d, nHeads)
	var st, dst []float32
	if slots > 0 {
		st = f32(op, "state", state, slots*per)
		dst = f32(op, "dState", dState, slots*per)
	}
	hpg := nHeads / nGroups
	// dInit[task] holds the task's heads' initial-state gradients.
	dInit := make([][]float32, nRuns*nGroups)
	be.parallel(nRuns*nGroups, maxCount(rs)*8*hs*hpg, func(lo, hi int) {
		hist := make([]float32, (maxCount(rs)+1)*hs)
		G := make([]float32, hs)
		for task := lo; task < hi; task++ {
			r, g := rs[task/nGroups], task%nGroups
			bo, co := s.bOff(g), s.cOff(g)
			for t := r.first; t < r.first+r.count; t++ {
				clear(dxs[t*w+bo : t*w+bo+stateSize])
				clear(dxs[t*w+co : t*w+co+stateSize])
			}
			if r.init >= 0 {
				dInit[task] = make([]float32, hpg*hs)
			}
			for h := g * hpg; h < (g+1)*hpg; h++ {
				A := float32(-math.Exp(float64(al[h])))
				// hist[i] is the state before the run's token i.
				if init := stateOf(st, r.init, per); init != nil {
					copy(hist[:hs], init[h*hs:(h+1)*hs])
				} else {
					clear(hist[:hs])
				}
				for i := range r.count {
					t := r.first + i
					dt, _ := ssmDt(dts[t*nHeads+h], db[h])
					copy(hist[(i+1)*hs:(i+2)*hs], hist[i*hs:(i+1)*hs])
					ssmStep(hist[(i+1)*hs:(i+2)*hs], xs[t*w+h*headDim:t*w+(h+1)*headDim], xs[t*w+bo:t*w+bo+stateSize],
						float32(math.Exp(float64(dt*A))), dt, stateSize)
				}
				if fin := stateOf(dst, r.final, per); fin != nil {
					copy(G, fin[h*hs:(h+1)*hs])
				} else {
					clear(G)
				}
				for i := r.count - 1; i >= 0; i-- {
					t := r.first + i
					dt, sp := ssmDt(dts[t*nHeads+h], db[h])
					a := float32(math.Exp(float64(dt * A)))
					x, B, C := xs[t*w+h*headDim:t*w+(h+1)*headDim], xs[t*w+bo:t*w+bo+stateSize], xs[t*w+co:t*w+co+stateSize]
					dyt := dys[(t*nHeads+h)*headDim : (t*nHeads+h+1)*headDim]
					cur, prev := hist[(i+1)*hs:(i+2)*hs], hist[i*hs:(i+1)*hs]
					dB, dC := dxs[t*w+bo:t*w+bo+stateSize], dxs[t*w+co:t*w+co+stateSize]
					var ddt float64
					for p := range headDim {
						var dxp float64
						for n := range stateSize {
							j := p*stateSize + n
							G[j] += dyt[p] * C[n]
							dC[n] += dyt[p] * cur[j]
							dxp += float64(G[j]) * float64(B[n])
							dB[n] += dt * G[j] * x[p]
							ddt += float64(G[j]) * (float64(x[p])*float64(B[n]) + float64(A)*float64(a)*float64(prev[j]))
							G[j] *= a
						}
						dxs[t*w+h*headDim+p] = roundIf(dxbf, ds[h]*dyt[p]+float32(float64(dt)*dxp))
					}
					ddts[t*nHeads+h] = float32(ddt) * sp
				}
				if dInit[task] != nil {
					copy(dInit[task][(h-g*hpg)*hs:], G)
				}
			}
			if dxbf { // B's and C's sums over the group's heads are done
				for t := r.first; t < r.first+r.count; t++ {
					roundAll(dxs[t*w+bo : t*w+bo+stateSize])
					roundAll(dxs[t*w+co : t*w+co+stateSize])
				}
			}
		}
	})
	for task, di := range dInit {
		if di == nil {
			continue
		}
		init := stateOf(dst, rs[task/nGroups].init, per)
		g := task % nGroups
		for j, v := range di {
			init[g*hpg*hs+j] += v
		}
	}
}
