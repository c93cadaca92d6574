// Package golden reads the reference outputs in testdata/golden (written by
// the PyTorch scripts in testdata/reference): a JSON manifest per file whose
// arrays point into a little-endian float32 .f32 file. Tests of model,
// trainer and the CUDA backend share it.
package golden

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// LogitCase is one sequence of testdata/golden/<model>.json: token ids and
// the float64 PyTorch logits (testdata/reference/reference.py).
type LogitCase struct {
	Name   string  `json:"name"`
	Tokens []int32 `json:"tokens"`
	Logits Array   `json:"logits"`
}

// Array locates a tensor in a golden file's .f32 data.
type Array struct {
	Offset int   `json:"offset"`
	Shape  []int `json:"shape"`
}

func (a Array) Of(vals []float32) ([]float32, error) {
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	if a.Offset < 0 || a.Offset+n > len(vals) {
		return nil, fmt.Errorf("array at offset %d of %d values runs past the data's %d", a.Offset, n, len(vals))
	}
	return vals[a.Offset : a.Offset+n], nil
}

// LossFile is testdata/golden/grpo_loss.json, written by
// testdata/reference/grpo_loss.py (PyTorch autograd in float64).
type LossFile struct {
	Rank      int     `json:"rank"`
	Scale     float32 `json:"scale"`
	MaxTokens int     `json:"max_tokens"`
	Data      string  `json:"data"`
	Models    []struct {
		Model   string       `json:"model"`
		LoRA    []LoRAArrays `json:"lora"`
		Samples []struct {
			Prompt     []int32   `json:"prompt"`
			Completion []int32   `json:"completion"`
			Advantage  float32   `json:"advantage"`
			Truncated  bool      `json:"truncated"`
			ModelMask  []bool    `json:"model_mask"`
			OldLogp    []float32 `json:"old_logp"`
		} `json:"samples"`
		Cases []struct {
			Name          string  `json:"name"`
			LossType      string  `json:"loss_type"`
			Epsilon       float64 `json:"epsilon"`
			EpsilonHigh   float64 `json:"epsilon_high"`
			Beta          float64 `json:"beta"`
			MaskTruncated bool    `json:"mask_truncated"`
			// The loss family (grpo_loss_family.json): the sequence
			// level, the behaviour correction, DPPO's settings.
			Level         string  `json:"level"`
			IS            string  `json:"is"`
			ISMin         float64 `json:"is_min"`
			ISMax         float64 `json:"is_max"`
			DPPOMaskLow   float64 `json:"dppo_mask_low"`
			DPPOMaskHigh  float64 `json:"dppo_mask_high"`
			AdvTau        float64 `json:"adv_tau"`
			KLTau         float64 `json:"kl_tau"`
			Loss          float64 `json:"loss"`
			TrainedTokens int     `json:"trained_tokens"`
			EntropyMean   float64 `json:"entropy_mean"`
			KLMean        float64 `json:"kl_mean"`
			// AuxCoef weighs the routers' load-balancing loss (MoE
			// models with router adapters); AuxLoss is its value.
			AuxCoef float64      `json:"aux_coef"`
			AuxLoss float64      `json:"aux_loss"`
			Grads   []LoRAArrays `json:"grads"`
		} `json:"cases"`
	} `json:"models"`
}

// LoRAArrays are one module's A and B (or their gradients).
type LoRAArrays struct {
	Module string `json:"module"`
	A      Array  `json:"A"`
	B      Array  `json:"B"`
}

// Read parses the JSON manifest testdata/golden/name into v and
// returns the float32 values of the .f32 file its "data" key names.
func Read(testdata, name string, v any) ([]float32, error) {
	dir := filepath.Join(testdata, "golden")
	js, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(js, v); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var data struct {
		Data string `json:"data"`
	}
	_ = json.Unmarshal(js, &data) // the same JSON parsed once already
	raw, err := os.ReadFile(filepath.Join(dir, data.Data))
	if err != nil {
		return nil, err
	}
	if len(raw)%4 != 0 {
		return nil, fmt.Errorf("%s: %d bytes is not a whole number of float32s", data.Data, len(raw))
	}
	vals := make([]float32, len(raw)/4)
	for i := range vals {
		vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return vals, nil
}
