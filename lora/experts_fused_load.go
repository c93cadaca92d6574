package lora

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// Loading fused-experts adapters (layout in experts_fused.go), on any
// mixture-of-experts model: PEFT writes this form for every architecture
// whose transformers class fuses its experts.

// matchParam is PEFT's target_parameters rule: the name, or a suffix of
// it at a dot.
func matchParam(target, name string) bool {
	return name == target || strings.HasSuffix(name, "."+target)
}

// selectedParams are layer's Parameters target_parameters selects, in
// registration order.
func (pc *peftConfig) selectedParams(c *model.Config, layer int) []string {
	var out []string
	for _, param := range fusedParams {
		for _, t := range pc.targetParams {
			if matchParam(t, fusedParamName(c, layer, param)) {
				out = append(out, param)
				break
			}
		}
	}
	return out
}

// fusedLayers reports which layers take their experts from fused
// matrices: those target_parameters selects or the file holds them for.
// Every target_parameters entry must name a Parameter of the model, and a
// layer's experts come in one form.
func (pc *peftConfig) fusedLayers(wPath string, c *model.Config, ft *fileTensors) ([]bool, error) {
	at := make([]bool, c.NumLayers)
	for _, t := range pc.targetParams {
		ok := false
		for layer := 0; layer < c.NumLayers && !ok; layer++ {
			ok = c.IsSparse(layer) && namesParam(t, c, layer)
		}
		if !ok {
			return nil, fmt.Errorf("%s: target_parameters entry %q names no parameter grpo adapts; this %s model's are the experts' %s and %s", wPath, t, c.ModelType, fusedParamName(c, 0, gateUpParam), fusedParamName(c, 0, downParam))
		}
	}
	for layer := range c.NumLayers {
		at[layer] = c.IsSparse(layer) && (ft.fused[layer].any() || len(pc.selectedParams(c, layer)) > 0)
		if !at[layer] {
			continue
		}
		for key, got := range ft.experts {
			if key[0] == layer {
				return nil, fmt.Errorf("%s: tensor %q adapts one expert of layer %d, whose experts the adapter also holds fused (%s); an adapter has one or the other", wPath, first(got.a, got.b).Name, layer, fusedParamName(c, layer, gateUpParam))
			}
		}
	}
	return at, nil
}

// namesParam reports whether target_parameters entry t names one of
// layer's Parameters.
func namesParam(t string, c *model.Config, layer int) bool {
	for _, param := range fusedParams {
		if matchParam(t, fusedParamName(c, layer, param)) {
			return true
		}
	}
	return false
}

// assign says which Parameter each of layer's fused pairs holds: with
// both adapted gate_up_proj is the inner one, a lone one is outer; without
// target_parameters the inner pair's presence, or else the outer pair's
// shape, decides.
func (pc *peftConfig) assign(wPath string, c *model.Config, layer int, fp fusedPair) (map[string]pair, error) {
	sel := pc.selectedParams(c, layer)
	if pc.targetParams == nil {
		switch {
		case first(fp.inner.a, fp.inner.b) != nil:
			sel = fusedParams
		case fp.outer.a != nil:
			gin, gout := paramDims(c, gateUpParam)
			din, dout := paramDims(c, downParam)
			isGateUp := fp.outer.a.Shape[len(fp.outer.a.Shape)-1] == gin && (fp.outer.b == nil || fp.outer.b.Shape[0] == gout)
			isDown := fp.outer.a.Shape[len(fp.outer.a.Shape)-1] == din && (fp.outer.b == nil || fp.outer.b.Shape[0] == dout)
			if isGateUp == isDown {
				return nil, fmt.Errorf("%s: cannot tell whether tensor %q adapts %s or %s; the adapter's target_parameters should say", wPath, fp.outer.a.Name, gateUpParam, downParam)
			}
			sel = []string{downParam}
			if isGateUp {
				sel = []string{gateUpParam}
			}
		}
	}
	out := map[string]pair{}
	switch len(sel) {
	case 2:
		out[gateUpParam], out[downParam] = fp.inner, fp.outer
	case 1:
		out[sel[0]] = fp.outer
		if t := first(fp.inner.a, fp.inner.b); t != nil {
			return nil, fmt.Errorf("%s: tensor %q adapts a second fused parameter of layer %d, but target_parameters selects only %s", wPath, t.Name, layer, fusedParamName(c, layer, sel[0]))
		}
	default:
		t := first(fp.outer.a, fp.outer.b, fp.inner.a, fp.inner.b)
		return nil, fmt.Errorf("%s: tensor %q adapts layer %d's fused experts, which target_parameters %q does not select", wPath, t.Name, layer, pc.targetParams)
	}
	return out, nil
}

// expertPairs are one projection's pairs for every expert of a layer.
type expertPairs struct {
	rank  int
	alpha float64
	a, b  [][]float32
}

// unfuse converts layer's fused pairs into grpo's per-expert pairs: by
// the metadata grpo's Save writes, back into its own pairs; otherwise
// gate_up_proj's one A serves gate_proj and up_proj, each with its half
// of B.
func (pc *peftConfig) unfuse(wPath string, c *model.Config, layer int, fp fusedPair, metaJSON string) (map[model.Proj]*expertPairs, error) {
	byParam, err := pc.assign(wPath, c, layer, fp)
	if err != nil {
		return nil, err
	}
	var meta fusedMeta
	if metaJSON != "" {
		if err := json.Unmarshal([]byte(metaJSON), &meta); err != nil {
			return nil, fmt.Errorf("%s: metadata %s is not valid: %v", wPath, fusedMetaKey, err)
		}
	}
	out := map[model.Proj]*expertPairs{}
	for _, param := range fusedParams {
		pr, ok := byParam[param]
		if !ok {
			continue
		}
		name := fusedParamName(c, layer, param)
		av, bv, rank, alpha, err := pc.fusedValues(wPath, c, param, name, pr)
		if err != nil {
			return nil, err
		}
		parts, mine := meta[strconv.Itoa(layer)][param]
		if !mine {
			for _, p := range paramProjs(param) {
				parts = append(parts, fusedPart{Proj: p.String(), Rank: rank, Alpha: alpha})
			}
		}
		if err := split(wPath, c, layer, param, av, bv, rank, parts, mine, pc, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fusedValues checks one fused pair's shapes against the rank PEFT gives
// the Parameter (rank_pattern by its name, else r) and reads it.
func (pc *peftConfig) fusedValues(wPath string, c *model.Config, param, name string, pr pair) (av, bv []float32, rank int, alpha float64, err error) {
	if pr.a == nil || pr.b == nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: the lora_A or lora_B of %s (fused experts) is missing", wPath, name)
	}
	rank, alpha = pc.rank, pc.alpha
	if v, ok := lookup(pc.rankPattern, name); ok {
		rank = int(v)
	}
	if v, ok := lookup(pc.alphaPattern, name); ok {
		alpha = v
	}
	in, out := paramDims(c, param)
	ne := c.NumExperts
	for _, t := range []struct {
		t    *safetensors.Tensor
		want []int
		dims string
	}{{pr.a, []int{ne * rank, in}, "[experts × rank, in_features]"}, {pr.b, []int{out, rank * ne}, "[out_features, rank × experts]"}} {
		if len(t.t.Shape) != 2 || t.t.Shape[0] != t.want[0] || t.t.Shape[1] != t.want[1] {
			return nil, nil, 0, 0, fmt.Errorf("%s: tensor %q has shape %v, want %v %s (rank %d, %d experts; %s is %d → %d per expert)", wPath, t.t.Name, t.t.Shape, t.want, t.dims, rank, ne, name, in, out)
		}
	}
	if av, err = floats(wPath, pr.a); err == nil {
		bv, err = floats(wPath, pr.b)
	}
	return av, bv, rank, alpha, err
}

// split splits one Parameter's pair (A: experts × rank rows; B: expert
// e's column k at k·E+e) into its parts' per-expert pairs, into out.
// grpo's own parts (mine) take their rows of A and their block of B,
// rescaled from the adapter-wide scale Save normalised B to to their own;
// B outside the blocks must be zero. Otherwise each part has all of A and
// its rows of B.
func split(wPath string, c *model.Config, layer int, param string, av, bv []float32, rank int, parts []fusedPart, mine bool, pc *peftConfig, out0 map[model.Proj]*expertPairs) error {
	name := fusedParamName(c, layer, param)
	if mine {
		if err := checkParts(wPath, name, param, parts, rank, pc.rank); err != nil {
			return err
		}
	}
	scale := scaleOf(pc.alpha, pc.rank, pc.rsLoRA)
	ne := c.NumExperts
	in, out := paramDims(c, param)
	lo, hi := make([]int, out), make([]int, out) // per row of B: its part's columns k
	off := 0
	for _, pt := range parts {
		p, _ := model.ParseProj(pt.Proj)
		_, pout := c.ExpertDims(p)
		r, pOff := pt.Rank, off
		if !mine {
			r, pOff = rank, 0
		}
		factor := float64(scale) / float64(scaleOf(pt.Alpha, pt.Rank, pc.rsLoRA))
		var avs, bvs [][]float32
		for e := range ne {
			ea := make([]float32, r*in)
			copy(ea, av[(e*rank+pOff)*in:(e*rank+pOff+r)*in])
			eb := make([]float32, pout*r)
			for o := range pout {
				for k := range r {
					v := bv[paramRow(c, p, o)*rank*ne+(pOff+k)*ne+e]
					if mine && factor != 1 {
						v = float32(float64(v) * factor)
					}
					eb[o*r+k] = v
				}
			}
			avs, bvs = append(avs, ea), append(bvs, eb)
		}
		for o := range pout {
			lo[paramRow(c, p, o)], hi[paramRow(c, p, o)] = pOff, pOff+r
		}
		out0[p] = &expertPairs{rank: r, alpha: pt.Alpha, a: avs, b: bvs}
		off += pt.Rank
	}
	if !mine {
		return nil
	}
	// grpo's block layout: a part's rows of B are zero outside its columns.
	for o := range out {
		for j := range rank * ne {
			if k := j / ne; bv[o*rank*ne+j] != 0 && (k < lo[o] || k >= hi[o]) {
				return fmt.Errorf("%s: %s's lora_B is not block diagonal as metadata %s says (row %d, column %d); the file was changed after grpo wrote it", wPath, name, fusedMetaKey, o, j)
			}
		}
	}
	return nil
}

// checkParts checks grpo's metadata for a Parameter of rank rank: its
// projections, each once and in row order, whose ranks add up to rank —
// or none, for the zero pair of rank r Save writes in their place.
func checkParts(wPath, name, param string, parts []fusedPart, rank, r int) error {
	sum, next := 0, 0
	projs := paramProjs(param)
	for _, pt := range parts {
		p, err := model.ParseProj(pt.Proj)
		for next < len(projs) && projs[next] != p {
			next++
		}
		if err != nil || next == len(projs) || pt.Rank < 1 {
			return fmt.Errorf("%s: metadata %s lists %+v in %s, which it cannot hold there", wPath, fusedMetaKey, pt, name)
		}
		next++
		sum += pt.Rank
	}
	if sum != rank && !(len(parts) == 0 && rank == r) {
		return fmt.Errorf("%s: metadata %s gives %s parts of rank %d in all, but its matrices have rank %d", wPath, fusedMetaKey, name, sum, rank)
	}
	return nil
}
