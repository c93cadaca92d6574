package model

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model/safetensors"
)

// Load reads config.json and the safetensors weights (single file or
// sharded) of the model directory dir onto be. BF16 weights go into BF16
// buffers (a backend may widen them); F16 and F32 are converted to F32.
func Load(dir string, be kernels.Backend) (*Model, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	m := newModel(cfg, be)
	for _, sp := range cfg.specs(&m.W) {
		t, ok := set.Tensor(sp.name)
		if !ok {
			m.Free()
			return nil, fmt.Errorf("%s: tensor %q is missing; is this a %s checkpoint with this config.json?", dir, sp.name, cfg.Arch().Name)
		}
		if !shapeEqual(t.Shape, sp.shape) {
			m.Free()
			return nil, fmt.Errorf("%s: tensor %q has shape %v but config.json implies %v", dir, sp.name, t.Shape, sp.shape)
		}
		buf, err := upload(be, t)
		if err != nil {
			m.Free()
			return nil, fmt.Errorf("%s: tensor %q: %v", dir, sp.name, err)
		}
		*sp.dst = buf
	}
	if cfg.TieWordEmbeddings {
		m.W.LMHead = m.W.Embed
	}
	return m, nil
}

func upload(be kernels.Backend, t safetensors.Tensor) (kernels.Buffer, error) {
	if bits, ok := t.BF16Bits(); ok {
		buf := be.Alloc(kernels.BF16, len(bits))
		be.UploadBF16(buf, bits)
		return buf, nil
	}
	vals, err := t.Float32s()
	if err != nil {
		return nil, err
	}
	buf := be.Alloc(kernels.F32, len(vals))
	be.Upload(buf, vals)
	return buf, nil
}

// NewRandom builds a model of the given shape with random weights
// (normal, std 0.02; norms 1), for benchmarks and shape experiments.
func NewRandom(cfg *Config, be kernels.Backend, seed uint64) *Model {
	m := newModel(cfg, be)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	for _, sp := range cfg.specs(&m.W) {
		vals := make([]float32, numel(sp.shape))
		if len(sp.shape) == 1 && !isBias(sp.name) {
			for i := range vals {
				vals[i] = 1
			}
		} else {
			for i := range vals {
				vals[i] = float32(rng.NormFloat64() * 0.02)
			}
		}
		buf := be.Alloc(kernels.F32, len(vals))
		be.Upload(buf, vals)
		*sp.dst = buf
	}
	if cfg.TieWordEmbeddings {
		m.W.LMHead = m.W.Embed
	}
	return m
}

func isBias(name string) bool { return filepath.Ext(name) == ".bias" }

// Free releases the model's weights.
func (m *Model) Free() {
	bufs := []kernels.Buffer{m.W.Embed, m.W.Norm, m.invFreq}
	if !m.Config.TieWordEmbeddings {
		bufs = append(bufs, m.W.LMHead)
	}
	for _, l := range m.W.Layers {
		bufs = append(bufs, l.InputNorm, l.PostAttnNorm, l.Q, l.K, l.V, l.O, l.QBias, l.KBias, l.VBias, l.OBias, l.QNorm, l.KNorm, l.Gate, l.Up, l.Down)
	}
	for _, b := range bufs {
		if b != nil {
			m.Backend.Free(b)
		}
	}
	m.W = Weights{}
}
