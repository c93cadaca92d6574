package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// linearStates are the per-sequence states of a model's gated DeltaNet
// layers (kernels.LinearOps): per layer, the conv's last kernel−1 inputs
// (slots × ConvStateWidth) and the recurrent state (slots ×
// RecurrentStateWidth), f32 on every backend — the state is summed into
// at every token, so rounding it to bf16 would compound. Attention layers
// have nil entries, as linear layers have nil K and V.
type linearStates struct {
	conv, state           []kernels.Buffer
	convWidth, stateWidth int // one slot's elements
}

// newLinearStates allocates the states of slots sequences, or returns nil
// for a model without linear layers.
func (m *Model) newLinearStates(slots int) *linearStates {
	c := m.Config
	if c.LinearLayers() == 0 {
		return nil
	}
	s := &linearStates{conv: make([]kernels.Buffer, c.NumLayers), state: make([]kernels.Buffer, c.NumLayers),
		convWidth: c.ConvStateWidth(), stateWidth: c.RecurrentStateWidth()}
	for l := range c.NumLayers {
		if c.decoderLayer(l).mixer.cacheKind().recurrent() {
			s.conv[l] = m.Backend.Alloc(kernels.F32, slots*c.ConvStateWidth())
			s.state[l] = m.Backend.Alloc(kernels.F32, slots*c.RecurrentStateWidth())
		}
	}
	return s
}

// layer is layer l's conv and recurrent state buffers; nil, nil for a
// cache without states (a training trace's whose sequences share no
// prompt: its runs neither start from nor keep a state).
func (s *linearStates) layer(l int) (conv, state kernels.Buffer) {
	if s == nil {
		return nil, nil
	}
	return s.conv[l], s.state[l]
}

func (s *linearStates) bytes() int64 {
	if s == nil {
		return 0
	}
	var n int64
	for l := range s.conv {
		if s.conv[l] != nil {
			n += 4 * int64(s.conv[l].Len()+s.state[l].Len())
		}
	}
	return n
}

func (s *linearStates) free(be kernels.Backend) {
	if s == nil {
		return
	}
	for l := range s.conv {
		if s.conv[l] != nil {
			be.Free(s.conv[l])
			be.Free(s.state[l])
		}
	}
	s.conv, s.state = nil, nil
}

// runs cuts a batch into the runs kernels.LinearOps takes: the
// consecutive tokens of one slot at consecutive positions. With states (a
// cache that keeps them) a run starting at position 0 is a fresh sequence
// (init −1), one starting later continues the slot's state, and every run
// leaves its state in its slot. Without (a training trace) every run must
// start at position 0 and keeps nothing (final −1). A slot's tokens must
// form one run: two runs of one slot in a call would race on its state.
func (b *Batch) runs(states bool) ([]int32, error) {
	var out []int32
	seen := map[int32]bool{}
	for i := 0; i < len(b.Tokens); {
		slot, start := b.Slots[i], i
		for i++; i < len(b.Tokens) && b.Slots[i] == slot && b.Positions[i] == b.Positions[i-1]+1; i++ {
		}
		if seen[slot] {
			return nil, fmt.Errorf("slot %d's tokens are not one run of consecutive positions (index %d); a model with linear-attention layers needs each sequence's new tokens together and in order", slot, start)
		}
		seen[slot] = true
		init, final := slot, slot
		if b.Positions[start] == 0 {
			init = -1
		}
		if !states {
			if init >= 0 {
				return nil, fmt.Errorf("slot %d starts at position %d; a training batch of a model with linear-attention layers runs every sequence from position 0", slot, b.Positions[start])
			}
			final = -1
		}
		out = append(out, int32(start), int32(i-start), init, final)
	}
	return out, nil
}

// copySlot copies slot src's states into slot dst, every layer: a fork of
// a sequence (KVCache.Fork) continues from the same state. The source
// must have consumed exactly the positions the fork shares: a state is
// the sum of every token before it, not a row per position.
func (s *linearStates) copySlot(be kernels.Backend, dst, src int) {
	if s == nil {
		return
	}
	for l := range s.conv {
		if s.conv[l] == nil {
			continue
		}
		for _, b := range []struct {
			buf   kernels.Buffer
			width int
		}{{s.conv[l], s.convWidth}, {s.state[l], s.stateWidth}} {
			be.Copy(b.buf.Slice(dst*b.width, b.width), b.buf.Slice(src*b.width, b.width))
		}
	}
}
