package serve

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
)

// TestCacheFitsPricesWindows: the KV check prices gpt_oss-tiny's sliding
// layer as the sampler's paged cache keeps it (its window's blocks and
// one prefill's, sampler.KVBytes), not at full length: 16 slots of 512
// tokens need 5,636,096 bytes on the CPU where every layer at full length
// would be 8,388,608, so memory between the two is enough, and less than
// the need is refused naming the flags.
func TestCacheFitsPricesWindows(t *testing.T) {
	m, err := model.Load(filepath.Join("..", "testdata", "models", "gpt_oss-tiny"), cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	need, err := sampler.KVBytes(m, sampler.Config{Slots: 16, MaxLen: 512})
	if err != nil {
		t.Fatal(err)
	}
	full := int64(16*model.BlocksFor(512, sampler.DefaultBlockSize)) * m.Config.KVBlockBytes(sampler.DefaultBlockSize, model.PagedKVDType(m.Backend.Describe()))
	if need != 5636096 || full != 8388608 {
		t.Fatalf("need %d, every layer at full length %d; want 5636096 and 8388608", need, full)
	}
	if err := cacheFits(m, 16, 512, need); err != nil {
		t.Errorf("exactly the windowed need free: %v", err)
	}
	if err := cacheFits(m, 16, 512, need-1); err == nil || !strings.Contains(err.Error(), "--slots") {
		t.Errorf("one byte short: %v", err)
	}
}
