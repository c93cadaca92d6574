package sampler

import (
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

// TestKVBytesIsWhatNewAllocates: KVBytes equals the keys and values of
// the cache New allocates for 16 slots of 512 tokens — gpt_oss-tiny (a
// sliding layer with a window of 4 beside a full one) on cpu and on emu
// (bf16 blocks and the padding slot of a backend with graphs, which the
// old serve check left out), and a model without windows — and for the
// windowed model it is below every layer at full length, what serve's
// check priced before (cpu: 5,636,096 against 8,388,608 bytes: the
// sliding pool holds 176 blocks, 16 windows and one prefill's, not 512).
func TestKVBytesIsWhatNewAllocates(t *testing.T) {
	b := emu.New()
	defer b.Close()
	for _, c := range []struct {
		name string
		be   kernels.Backend
	}{{"gpt_oss-tiny", cpu.New()}, {"gpt_oss-tiny", b}, {"", cpu.New()}} {
		m := tinyModel(t)
		if c.name != "" {
			var err error
			if m, err = model.Load(filepath.Join("..", "testdata", "models", c.name), c.be); err != nil {
				t.Fatal(err)
			}
		}
		cfg := Config{Slots: 16, MaxLen: 512}
		got, err := KVBytes(m, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := newSampler(t, m, nil, cfg)
		var alloc int64
		d := m.Backend.Describe()
		for i := range s.cache.K {
			for _, x := range []kernels.Buffer{s.cache.K[i], s.cache.V[i]} {
				if x != nil {
					alloc += int64(x.Len() * d.Storage(x.DType()).Size())
				}
			}
		}
		if got != alloc {
			t.Errorf("%s on %s: KVBytes %d, New allocates %d", c.name, m.Backend.Name(), got, alloc)
		}
		allFull := int64(16*model.BlocksFor(512, DefaultBlockSize)) * m.Config.KVBlockBytes(DefaultBlockSize, model.PagedKVDType(d))
		if c.name != "" && got >= allFull {
			t.Errorf("%s: KVBytes %d is not below every layer at full length (%d)", c.name, got, allFull)
		}
		t.Logf("%s on %s: %d bytes (every layer at full length: %d)", c.name, m.Backend.Name(), got, allFull)
	}
}
