package model

import (
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
)

// allocCounter is the CPU backend with a count of live elements.
type allocCounter struct {
	*cpu.Backend
	live int
}

func (c *allocCounter) Alloc(dt kernels.DType, n int) kernels.Buffer {
	c.live += n
	return c.Backend.Alloc(dt, n)
}

func (c *allocCounter) Free(b kernels.Buffer) {
	c.live -= b.Len()
	c.Backend.Free(b)
}

// TestFusedWeightsAreTheOnlyCopy: loading writes q/k/v and gate/up
// straight into their fused buffers, so the model holds each parameter
// once (ParamCount elements, plus RoPE's frequencies), Q, K, V, Gate and Up
// are views of QKV and GateUp at their offsets, and Free releases it all.
func TestFusedWeightsAreTheOnlyCopy(t *testing.T) {
	for _, name := range []string{"qwen3-tiny-bf16", "llama-tiny"} {
		t.Run(name, func(t *testing.T) {
			be := &allocCounter{Backend: cpu.New()}
			m, err := Load(filepath.Join("..", "testdata", "models", name), be)
			if err != nil {
				t.Fatal(err)
			}
			if want := int(m.Config.ParamCount()) + m.invFreq.Len(); be.live != want {
				t.Errorf("%d elements allocated, want %d (one copy of each parameter)", be.live, want)
			}
			l := m.W.Layers[0]
			for _, c := range []struct {
				part, all kernels.Buffer
				off       int
			}{{l.Q, l.QKV, 0}, {l.K, l.QKV, l.Q.Len()}, {l.V, l.QKV, l.Q.Len() + l.K.Len()}, {l.Gate, l.GateUp, 0}, {l.Up, l.GateUp, l.Gate.Len()}} {
				v := make([]float32, c.part.Len())
				for i := range v {
					v[i] = float32(i%200 + 1) // exact in bf16
				}
				be.Upload(c.part, v)
				all := make([]float32, c.all.Len())
				be.Download(all, c.all)
				for i := range v {
					if all[c.off+i] != v[i] {
						t.Fatalf("a write to a projection at offset %d did not reach the fused buffer", c.off)
					}
				}
			}
			m.Free()
			if be.live != 0 {
				t.Errorf("%d elements still live after Free", be.live)
			}
		})
	}
}

// TestMapWeightsKeepsViews: replacing every weight buffer (here by a copy)
// leaves the logits as they were and the projections as views of the new
// fused buffers, with no buffer leaked or freed twice.
func TestMapWeightsKeepsViews(t *testing.T) {
	be := &allocCounter{Backend: cpu.New()}
	m := NewRandom(tinyConfig("qwen2"), be, 3)
	var b Batch
	b.Add(0, 0, 1, 2, 3, 4)
	want := logitsOf(t, m, &b)
	live := be.live
	m.MapWeights(func(old kernels.Buffer) kernels.Buffer {
		nb := be.Alloc(old.DType(), old.Len())
		be.Copy(nb, old)
		be.Free(old)
		return nb
	})
	if be.live != live {
		t.Errorf("%d elements live after MapWeights, %d before", be.live, live)
	}
	if d := maxAbsDiff(logitsOf(t, m, &b), want); d != 0 {
		t.Errorf("logits moved by %g after MapWeights", d)
	}
	l := m.W.Layers[1]
	be.Upload(l.Up, make([]float32, l.Up.Len()))
	all := make([]float32, l.GateUp.Len())
	be.Download(all, l.GateUp)
	for _, v := range all[l.Gate.Len():] {
		if v != 0 {
			t.Fatal("Up is not a view of the new GateUp")
		}
	}
	m.Free()
}

func logitsOf(t *testing.T, m *Model, b *Batch) []float32 {
	t.Helper()
	cache := m.NewKVCache(1, b.Len())
	defer cache.Free()
	out, err := m.Logits(cache, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
