package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// Routing replay. A Batch may carry the experts its tokens were routed to
// when they were sampled (Batch.Experts), so that the training forward
// routes exactly as the behaviour policy did even where bf16 rounding or
// a changed adapter would flip a near-tie; and Forward can record the
// experts it routes to (Batch.RecordExperts). Both use one layout: token
// i's experts in the s-th sparse layer are at (i·S + s)·k, k of them, S =
// Config.SparseLayers(), k = num_experts_per_tok.

// RoutingLen is the length of Batch.Experts for n tokens (0 for a dense
// model).
func (c *Config) RoutingLen(n int) int { return n * c.SparseLayers() * c.NumExpertsPerTok }

func (b *Batch) validateRouting(c *Config) error {
	want := c.RoutingLen(b.Len())
	for _, f := range []struct {
		name string
		v    []int32
	}{{"Experts", b.Experts}, {"RecordExperts", b.RecordExperts}} {
		if f.v == nil {
			continue
		}
		if want == 0 {
			return fmt.Errorf("batch has %s but the model (%s) has no mixture-of-experts layers", f.name, c.ModelType)
		}
		if len(f.v) != want {
			return fmt.Errorf("batch %s has %d entries; %d tokens × %d sparse layers × %d experts per token need %d",
				f.name, len(f.v), b.Len(), c.SparseLayers(), c.NumExpertsPerTok, want)
		}
	}
	for i, e := range b.Experts {
		if e < 0 || int(e) >= c.NumExperts {
			return fmt.Errorf("batch Experts[%d] = %d is outside the model's %d experts", i, e, c.NumExperts)
		}
	}
	return nil
}

// layerRouting holds, per layer, the buffer of the experts the layer
// routes to: nil for dense layers; the uploaded replay when the batch has
// one; else a fresh buffer the layer writes.
type layerRouting []kernels.Buffer

// newRouting allocates (and for a replay uploads) each sparse layer's
// experts buffer.
func (m *Model) newRouting(a *arena, b *Batch) layerRouting {
	c := m.Config
	if c.SparseLayers() == 0 {
		return nil
	}
	n, k, sl := b.Len(), c.NumExpertsPerTok, c.SparseLayers()
	r := make(layerRouting, c.NumLayers)
	s := 0
	for l := range c.NumLayers {
		if !c.IsSparse(l) {
			continue
		}
		bufSpecs{c.routingSpec(&r[l], n)}.alloc(a)
		if b.Experts != nil {
			m.Backend.UploadI32(r[l], routingColumn(b.Experts, n, sl, s, k))
		}
		s++
	}
	return r
}

// layer is layer l's experts buffer; nil in a dense layer or model.
func (r layerRouting) layer(l int) kernels.Buffer {
	if r == nil {
		return nil
	}
	return r[l]
}

// routingSpec is a sparse layer's experts buffer for n tokens: k int32
// per token.
func (c *Config) routingSpec(dst *kernels.Buffer, n int) bufSpec {
	return bufSpec{dst, kernels.I32, n * c.NumExpertsPerTok}
}

// routingColumn gathers sparse layer s's n × k block out of the
// token-major layout.
func routingColumn(all []int32, n, layers, s, k int) []int32 {
	out := make([]int32, n*k)
	for t := range n {
		copy(out[t*k:(t+1)*k], all[(t*layers+s)*k:(t*layers+s+1)*k])
	}
	return out
}

// record downloads each sparse layer's experts into dst (token-major).
func (r layerRouting) record(be kernels.Backend, c *Config, dst []int32, n int) {
	k, sl, s := c.NumExpertsPerTok, c.SparseLayers(), 0
	col := make([]int32, n*k)
	for _, buf := range r {
		if buf == nil {
			continue
		}
		be.DownloadI32(col, buf)
		for t := range n {
			copy(dst[(t*sl+s)*k:(t*sl+s+1)*k], col[t*k:(t+1)*k])
		}
		s++
	}
}

// decodeRouting lays each sparse layer's experts buffer for a decode
// step of n rows into out after its first n entries (the tokens), layer
// after layer: one download brings back the tokens and the whole record.
// Each layer's buffer holds rows rows: n, or under expert parallelism
// every rank's n (decode_ep.go), this rank's among them.
func (m *Model) decodeRouting(out kernels.Buffer, n, rows int) layerRouting {
	c := m.Config
	if c.SparseLayers() == 0 {
		return nil
	}
	k := c.NumExpertsPerTok
	r := make(layerRouting, c.NumLayers)
	off := n
	for l := range c.NumLayers {
		if c.IsSparse(l) {
			r[l] = out.Slice(off, rows*k)
			off += rows * k
		}
	}
	return r
}

// routingRows writes the first n rows of a layer-major record (each
// sparse layer's rows × k experts, layer after layer: decodeRouting's
// layout) into dst in the token-major layout.
func (c *Config) routingRows(dst, layerMajor []int32, n, rows int) {
	k, sl := c.NumExpertsPerTok, c.SparseLayers()
	for s := range sl {
		col := layerMajor[s*rows*k:]
		for t := range n {
			copy(dst[(t*sl+s)*k:(t*sl+s+1)*k], col[t*k:(t+1)*k])
		}
	}
}

// routingMismatch is the fraction of orig's tokens for which, in some
// sparse layer, the top-k recomputed under replay is not the replayed set.
// With shared prefixes (sb not nil) the trace ran the reduced batch: a
// dropped token counts when the row it shares (the parent's) does, or when
// its own record differs from that row's, which was replayed in its place.
func (tr *Trace) routingMismatch(orig *Batch, sb *sharedBatch) float64 {
	c, be := tr.m.Config, tr.m.Backend
	k := c.NumExpertsPerTok
	differs := make([]bool, tr.n)
	got, want := make([]int32, tr.n*k), make([]int32, tr.n*k)
	any := false
	for _, s := range tr.layers {
		if s.moe == nil || !s.moe.replay {
			continue
		}
		any = true
		be.DownloadI32(got, s.moe.recomputed)
		be.DownloadI32(want, s.moe.experts)
		for t := range tr.n {
			differs[t] = differs[t] || !sameSet(got[t*k:(t+1)*k], want[t*k:(t+1)*k])
		}
	}
	if !any {
		return 0
	}
	if sb != nil {
		per, sl := c.RoutingLen(1), c.SparseLayers()
		d := 0
		for i, ri := range sb.remap {
			row := ri
			if row < 0 {
				row = sb.table[int(orig.Slots[i])*sb.maxLen+int(orig.Positions[i])]
			}
			mismatched := differs[row]
			if ri < 0 && !mismatched {
				own, used := orig.Experts[i*per:(i+1)*per], orig.Experts[int(sb.kept[row])*per:int(sb.kept[row]+1)*per]
				for s := range sl {
					if !sameSet(own[s*k:(s+1)*k], used[s*k:(s+1)*k]) {
						mismatched = true
						break
					}
				}
			}
			if mismatched {
				d++
			}
		}
		return float64(d) / float64(len(sb.remap))
	}
	d := 0
	for _, x := range differs {
		if x {
			d++
		}
	}
	return float64(d) / float64(tr.n)
}

func sameSet(a, b []int32) bool {
	for _, x := range a {
		found := false
		for _, y := range b {
			found = found || x == y
		}
		if !found {
			return false
		}
	}
	return true
}
