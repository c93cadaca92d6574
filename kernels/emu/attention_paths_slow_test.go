//go:build slow

// The attention conformance cases again on each forced kernel path: slow
// (about 15 s), so CI runs it with -tags slow and `go test ./...` does not
// (TestConformance runs every case on the path its shape picks).

package emu

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

// TestAttentionPaths runs the Attention conformance cases on each forward
// kernel, whichever the shape would pick: the tiled flash kernel, split-KV
// decoding with the GPU's split length, and with splits of 8 keys so that
// the combine pass merges several partials in every case. The shared-prefix
// cases run too: their splits follow the same setting, and with splits of
// 8 keys some straddle a group's last shared block.
func TestAttentionPaths(t *testing.T) {
	for _, p := range []struct {
		name string
		path cuda.AttentionPath
	}{{"flash", cuda.AttentionFlash}, {"decode", cuda.AttentionDecode}, {"decode-split", cuda.AttentionDecodeSplit}} {
		t.Run(p.name, func(t *testing.T) {
			b := New()
			defer b.Close()
			b.SetAttentionPath(p.path)
			if err := kerneltest.Check(b, "Attention", "AttentionSharedPrefix"); err != nil {
				t.Error(err)
			}
		})
	}
}
