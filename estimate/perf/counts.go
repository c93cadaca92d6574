package perf

import (
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// Counter is be's counting device (cuda.Counter), or nil when it has
// none (cpu).
func Counter(be kernels.Backend) *cuda.Backend {
	b, _ := be.(*cuda.Backend)
	return b
}

// Measure runs f and returns what it asked of the device, or nil without
// a counter. The bench wraps its timed units in it, so the figures are
// those of the last (warm) run, at no extra work. A Sync inside f counts;
// the callers' own Syncs after it do not.
func Measure(be kernels.Backend, f func() error) (*cuda.Counts, error) {
	cb := Counter(be)
	if cb == nil {
		return nil, f()
	}
	before := cb.Counts()
	err := f()
	c := cb.Counts().Sub(before)
	return &c, err
}

// TagWeights marks the model's weights (and the adapter's, when there is
// one) so GEMMs reading them count their bytes.
func TagWeights(m *model.Model, ad *lora.Adapter) {
	cb := Counter(m.Backend)
	if cb == nil {
		return
	}
	m.MapWeights(func(b kernels.Buffer) kernels.Buffer {
		cb.TagWeights(b)
		return b
	})
	if ad == nil {
		return
	}
	for l := range m.Config.NumLayers {
		for p := range model.NumProj {
			if lr := ad.LoRA(l, p); lr != nil {
				cb.TagWeights(lr.A, lr.B)
			}
		}
	}
}
