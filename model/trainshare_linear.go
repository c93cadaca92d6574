package model

import (
	"fmt"
	"slices"

	"github.com/grpo-dev/grpo/kernels"
)

// A linear-attention (gated DeltaNet) layer has no per-position keys and
// values for a child to read: a prompt reaches the tokens after it only as
// the layer's conv and recurrent states at the prompt's end. So a training
// batch whose groups share prompts (Batch.Share) runs those layers in two
// calls of kernels.LinearOps:
//
//   - the prompts: each parent's first k rows, one run from a fresh state
//     that leaves its final states in the group's slot of the trace's
//     states (KVCache.linear, one slot per group);
//   - the rest: the parent's own continuation and each child's rows, runs
//     starting from the group's slot (init), and the lone sequences' runs,
//     fresh.
//
// Two calls because within one call a slot written as final may not be
// read as init. The backward runs them in reverse: the continuations add
// the gradient with respect to their initial states into the group's slot
// (the group's continuations summed, as their forward all read it), and
// the prompts' call takes that sum in as the gradient of their final
// state. Each call works on a contiguous range of rows, so the reduced
// batch puts every prompt row first (promptsFirst): an op may leave
// anything in rows no run of its call covers, and the other call's rows
// are then outside its operands.

// linearSplit is the linear-attention layers' two calls over a reduced
// training batch: the first promptRows rows are the prompts' call
// (runs prompt), the others the rest's (runs rest, rows numbered from
// promptRows); groups is the slots the trace's states hold.
type linearSplit struct {
	promptRows   int
	prompt, rest []int32
	groups       int
}

// uniformPrompts cuts each group's shares to its children's shortest: the
// parent's prompt run stops at one position, where its state is taken, so
// every child continues from there. (GRPO's children share the whole
// prompt; only a child scored inside it, where its own rows must be
// computed, shortens the group's.)
func uniformPrompts(shared map[int32]prefixShare) {
	k := map[int32]int32{}
	for _, sh := range shared {
		if v, ok := k[sh.parent]; !ok || sh.n < v {
			k[sh.parent] = sh.n
		}
	}
	for c, sh := range shared {
		sh.n = k[sh.parent]
		shared[c] = sh
	}
}

// promptsFirst orders b's rows for the reduced batch: each parent's shared
// prompt rows (those its children drop), then every other row, each part
// in the batch's order.
func promptsFirst(b *Batch, shared map[int32]prefixShare) []int32 {
	k := map[int32]int32{}
	for _, sh := range shared {
		k[sh.parent] = sh.n
	}
	var first, rest []int32
	for i := range b.Len() {
		if b.Positions[i] < k[b.Slots[i]] {
			first = append(first, int32(i))
		} else {
			rest = append(rest, int32(i))
		}
	}
	return append(first, rest...)
}

// newLinearSplit cuts the reduced batch r (its rows ordered by
// promptsFirst) into the two calls' runs. Each sequence of the original
// batch was one run from position 0 (checked before sharing), so a
// parent's prompt rows, its continuation and a child's own rows are each
// one run of consecutive positions here; a run of the rest starts at its
// group's prompt length when it has a group, at 0 otherwise.
func newLinearSplit(r *Batch, shared map[int32]prefixShare) *linearSplit {
	group := map[int32]int32{} // a parent's or child's slot → its group's state slot
	k := map[int32]int32{}     // a parent's slot → its prompt length
	parents := make([]int32, 0, len(shared))
	for _, sh := range shared {
		if sh.n > 0 {
			k[sh.parent] = sh.n
			parents = append(parents, sh.parent)
		}
	}
	// Groups are numbered by their parents' slots, so the layout does not
	// depend on map order.
	slices.Sort(parents)
	parents = slices.Compact(parents)
	for i, p := range parents {
		group[p] = int32(i)
	}
	for _, sh := range shared {
		if sh.n > 0 {
			group[sh.child] = group[sh.parent]
		}
	}
	sp := &linearSplit{groups: len(parents)}
	for _, p := range parents {
		sp.promptRows += int(k[p])
	}
	n := r.Len()
	for i := 0; i < n; {
		slot, start := r.Slots[i], i
		for i++; i < n && i != sp.promptRows && r.Slots[i] == slot && r.Positions[i] == r.Positions[i-1]+1; i++ {
		}
		g, grouped := group[slot]
		if start < sp.promptRows {
			sp.prompt = append(sp.prompt, int32(start), int32(i-start), -1, g)
			continue
		}
		init := int32(-1)
		if grouped {
			init = g
		}
		sp.rest = append(sp.rest, int32(start-sp.promptRows), int32(i-start), init, -1)
	}
	return sp
}

// check verifies what newLinearSplit relies on: every run of the prompts'
// call is a whole prompt from position 0, and every run of the rest starts
// where its initial state leaves off (its group's prompt length, or 0).
func (sp *linearSplit) check(r *Batch) error {
	k := make([]int32, sp.groups)
	for i := 0; i < len(sp.prompt); i += 4 {
		first, count, g := sp.prompt[i], sp.prompt[i+1], sp.prompt[i+3]
		if r.Positions[first] != 0 {
			return fmt.Errorf("sequence %d's shared prompt starts at position %d, not 0", r.Slots[first], r.Positions[first])
		}
		k[g] = count
	}
	for i := 0; i < len(sp.rest); i += 4 {
		first, init := int(sp.rest[i])+sp.promptRows, sp.rest[i+2]
		want := int32(0)
		if init >= 0 {
			want = k[init]
		}
		if r.Positions[first] != want {
			return fmt.Errorf("sequence %d's rows after its shared prompt start at position %d, want %d: a model with linear-attention layers needs each sequence's tokens together and in order", r.Slots[first], r.Positions[first], want)
		}
	}
	return nil
}

// linearCall is one call of the linear-attention ops over rows
// off..off+n−1 of a batch, cut into nRuns runs whose rows count from off.
type linearCall struct {
	off, n int
	runs   kernels.Buffer
	nRuns  int
}

// linearCalls are the calls a DeltaNet layer makes over a batch of n rows,
// in the forward's order (the backward reverses it): one over every row,
// or with a linearSplit the prompts' and then the rest's.
func (idx *batchIndex) linearCalls(n int) []linearCall {
	if idx.promptRuns == nil {
		return []linearCall{{0, n, idx.runs, idx.nRuns}}
	}
	calls := []linearCall{{0, idx.promptRows, idx.promptRuns, idx.nPromptRuns}}
	if idx.nRuns > 0 {
		calls = append(calls, linearCall{idx.promptRows, n - idx.promptRows, idx.runs, idx.nRuns})
	}
	return calls
}

// rows is the call's rows of x, a batch-wide operand of width values per
// row.
func (lc linearCall) rows(x kernels.Buffer, width int) kernels.Buffer {
	return x.Slice(lc.off*width, lc.n*width)
}
