package tokenizer

import (
	"slices"
	"sync"
	"testing"
)

// Encode is used from many goroutines (sampler, environments); the shared
// BPE cache must not change results.
func TestEncodeConcurrent(t *testing.T) {
	tok := variants(t)["gpt2"] // the regexp2 path, plus the shared cache
	lines := corpus(t)
	want := make([][]int32, len(lines))
	for i, s := range lines {
		want[i] = tok.Encode(s)
	}
	tok.model.mu.Lock()
	tok.model.cache = map[string][]int32{}
	tok.model.mu.Unlock()
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := range lines {
				i := (k + g*len(lines)/4) % len(lines)
				if !slices.Equal(tok.Encode(lines[i]), want[i]) {
					errs <- lines[i]
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent Encode(%q) differs from sequential", s)
	}
}
