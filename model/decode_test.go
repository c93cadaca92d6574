package model_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/kernels/emu"
	"github.com/grpo-dev/grpo/model"
)

func pcgState(t *testing.T, p *rand.PCG) (hi, lo uint64) {
	b, err := p.MarshalBinary()
	if err != nil || len(b) != 20 {
		t.Fatalf("PCG.MarshalBinary: %d bytes, %v", len(b), err)
	}
	return binary.BigEndian.Uint64(b[4:]), binary.BigEndian.Uint64(b[12:])
}

// noCapture is the emulated backend with a device that refuses to capture.
type noCapture struct{ *cuda.Backend }

func (noCapture) BeginCapture() error { return errors.New("capture refused (test)") }

// TestDecoderRunsWithoutCapture: when the device cannot capture the step,
// the decoder says why (GraphErr) and runs it op by op, giving the tokens
// the graph path gives.
func TestDecoderRunsWithoutCapture(t *testing.T) {
	be := emu.New()
	defer be.Close()
	var toks [2][][]int32
	for k, b := range []kernels.Backend{be, noCapture{be}} {
		m, err := model.Load("../testdata/models/qwen3-tiny", b)
		if err != nil {
			t.Fatal(err)
		}
		cache := m.NewKVCache(4, 8)
		rows := make([]model.DecodeRow, 3)
		for s := range rows {
			rows[s] = model.DecodeRow{Slot: int32(s), Token: int32(10 * s), Params: kernels.SampleParams{Temperature: 1, TopP: 1}, PCGHi: uint64(s), PCGLo: 1}
		}
		d := m.NewDecoder(4)
		if err := d.Load(cache, rows, 3); err != nil {
			t.Fatal(err)
		}
		tok, lp := make([]int32, 3), make([]float32, 3)
		for range 4 {
			if err := d.Step(cache, tok, lp); err != nil {
				t.Fatal(err)
			}
			toks[k] = append(toks[k], append([]int32(nil), tok...))
		}
		if gerr := d.GraphErr(); (gerr != nil) != (k == 1) {
			t.Fatalf("backend %d: GraphErr %v", k, gerr)
		}
		d.Free()
		cache.Free()
		m.Free()
	}
	for i := range toks[0] {
		if !slices.Equal(toks[0][i], toks[1][i]) {
			t.Fatalf("step %d: graph path %v, op by op %v", i, toks[0][i], toks[1][i])
		}
	}
}
