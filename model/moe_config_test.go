package model

import (
	"strings"
	"testing"
)

const moeBase = `"model_type":"qwen3_moe","hidden_size":64,"intermediate_size":128,"num_hidden_layers":4,"num_attention_heads":4,"vocab_size":100`

// TestParseMoEConfig: Qwen3MoeConfig's defaults apply when its keys are
// left out (128 experts, top-8, moe_intermediate 768, step 1, aux coef
// 0.001), which layers are sparse follows HF's rule, and parameter counts
// split stored from active.
func TestParseMoEConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{` + moeBase + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.NumExperts != 128 || c.NumExpertsPerTok != 8 || c.MoEIntermediateSize != 768 || c.DecoderSparseStep != 1 ||
		c.RouterAuxLossCoef != 0.001 || c.NormTopKProb || !c.Arch().QKNorm {
		t.Errorf("defaults: %+v", c.MoEConfig)
	}
	c, err = ParseConfig([]byte(`{` + moeBase + `,"num_experts":4,"num_experts_per_tok":2,"moe_intermediate_size":16,
		"decoder_sparse_step":2,"mlp_only_layers":[3],"norm_topk_prob":true}`))
	if err != nil {
		t.Fatal(err)
	}
	// (l+1) % 2 == 0 → layers 1 and 3; 3 is mlp_only.
	var sparse []bool
	for l := range c.NumLayers {
		sparse = append(sparse, c.IsSparse(l))
	}
	if want := []bool{false, true, false, false}; !equalBools(sparse, want) || c.SparseLayers() != 1 {
		t.Errorf("sparse layers %v, want %v", sparse, want)
	}
	// One sparse layer: 4 experts × 3·64·16 + router 4·64 replace 3·64·128;
	// 2 of the 4 experts are active per token.
	dense := *c
	dense.NumExperts = 0
	if got, want := c.ParamCount()-dense.ParamCount(), int64(4*3*64*16+4*64-3*64*128); got != want {
		t.Errorf("params differ from the all-dense model by %d, want %d", got, want)
	}
	if got, want := c.ParamCount()-c.ActiveParamCount(), int64(2*3*64*16); got != want {
		t.Errorf("stored − active = %d, want the 2 idle experts' %d", got, want)
	}
	// Dense architectures carry no MoE settings.
	q, err := ParseConfig([]byte(`{"model_type":"qwen3","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,"num_experts":8}`))
	if err != nil || q.NumExperts != 0 || q.SparseLayers() != 0 {
		t.Errorf("qwen3 with num_experts: %v, %+v", err, q.MoEConfig)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestParseMoEConfigErrors: each bad MoE key is one error naming it.
func TestParseMoEConfigErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`,"num_experts":-1`:                          "num_experts must be ≥ 0",
		`,"num_experts":4,"num_experts_per_tok":5`:   "num_experts_per_tok 5 must be in 1..min(num_experts 4, 32)",
		`,"num_experts":64,"num_experts_per_tok":33`: "num_experts_per_tok 33",
		`,"num_experts_per_tok":0`:                   "num_experts_per_tok 0",
		`,"moe_intermediate_size":0`:                 "moe_intermediate_size must be a positive integer",
		`,"decoder_sparse_step":0`:                   "decoder_sparse_step must be a positive integer",
		`,"mlp_only_layers":[4]`:                     "mlp_only_layers lists layer 4, outside 0..3",
		`,"router_aux_loss_coef":-0.1`:               "router_aux_loss_coef must be ≥ 0",
		`,"mlp_only_layers":"1"`:                     `"mlp_only_layers" must be a list`,
	} {
		_, err := ParseConfig([]byte(`{` + moeBase + cfg + `}`))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", cfg, err, want)
		}
	}
}
