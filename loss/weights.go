package loss

// tokenWeights returns, per sample and completion token, the weight of its
// loss term: the mask times the aggregation's normalisation, so that the
// weighted sum over all tokens is the batch loss. The normalisers count
// the whole batch, of which samples may be one device's share.
func tokenWeights(samples []Sample, whole Batch, cfg Config, maxTokens int) ([][]float32, int) {
	w := make([][]float32, len(samples))
	total := 0
	for i := range samples {
		w[i] = make([]float32, len(samples[i].Completion))
		for j := range w[i] {
			if samples[i].trained(j, cfg) {
				w[i][j] = 1
				total++
			}
		}
	}
	for i := range w {
		var norm float64
		switch cfg.Type {
		case "dapo", "cispo", "dppo": // TRL's cispo and prime-rl's loss: the batch's token mean
			norm = float64(whole.Tokens)
		case "grpo":
			n := 0
			for _, v := range w[i] {
				n += int(v)
			}
			norm = float64(n) * float64(whole.Samples)
		case "dr_grpo":
			norm = float64(whole.Samples) * float64(maxTokens)
		}
		for j := range w[i] {
			if w[i][j] != 0 {
				w[i][j] = float32(1 / norm)
			}
		}
	}
	return w, total
}
