package lora

import "github.com/grpo-dev/grpo/model"

// MaxWeightsBytes is the most bytes an adapter_model.safetensors that the
// adapter_config.json in config describes can hold for m: every matrix the
// model has that an adapter may adapt (each projection, each expert's,
// each router), at the config's largest rank (r or any rank_pattern
// value), in F32 (the widest dtype Load reads), plus room for the header.
// A server reading a client-named adapter refuses a larger file before
// reading it: no valid adapter can be that large. An invalid config is the
// error Load would give.
func MaxWeightsBytes(config []byte, m *model.Model) (int64, error) {
	pc, err := parsePEFTConfig(config)
	if err != nil {
		return 0, err
	}
	rank := float64(pc.rank)
	for _, p := range pc.rankPattern {
		rank = max(rank, p.value)
	}
	c := m.Config
	var cols, matrices int64 // Σ (in + out) over the matrices; their count
	for layer := range c.NumLayers {
		if c.IsSparse(layer) {
			in, out := routerDims(c)
			cols, matrices = cols+int64(in+out), matrices+1
		}
		for p := range model.NumProj {
			if isExpertProj(c, layer, p) {
				in, out := c.ExpertDims(p)
				cols, matrices = cols+int64(c.NumExperts)*int64(in+out), matrices+int64(c.NumExperts)
				continue
			}
			in, out := c.Dims(p)
			cols, matrices = cols+int64(in+out), matrices+1
		}
	}
	// A header entry (name, dtype, shape, offsets) is under 256 bytes; each
	// matrix has two tensors.
	header := 2*256*matrices + 1<<20
	data := rank * float64(cols) * 4
	if data > 1<<62 {
		return 1 << 62, nil
	}
	return int64(data) + header, nil
}
