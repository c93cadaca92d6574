package model

import (
	"fmt"
)

// prefixShare says that positions 0..n−1 of sequence child hold the same
// tokens as those of sequence parent (Batch.Share).
type prefixShare struct{ child, parent, n int32 }

// Share declares that the first n positions of the sequence in slot child
// are the same tokens as those of slot parent, both in the batch: a GRPO
// group's rollouts start with one prompt. ForwardTrain then runs those
// positions once, for parent; child's queries attend to parent's keys and
// values there, and their gradients flow back into parent's rows, so the
// loss and every gradient are those of the unshared batch (up to summation
// order) for a fraction of the work. A linear-attention (gated DeltaNet)
// layer, which keeps no keys and values, starts child's own rows from the
// state parent's run leaves at the end of the shared positions, and the
// state's gradient flows back into parent's rows (trainshare_linear.go);
// there every child of a parent shares the shortest prefix any of them
// does. Rows that are scored stay child's own, so sharing stops before
// child's first scored row. Forward, which writes a sampler's cache,
// ignores it (the sampler shares blocks with KVCache.Fork instead).
//
// A replayed routing (Batch.Experts) is reduced the same way: the rows run
// replay their own tokens' records, so a shared position replays the
// parent's. Its routing was the child's too (the same tokens after the
// same prefix), unless sampling was not deterministic; a child's record
// that differs from the parent's there is not replayed, and
// Trace.RoutingMismatch counts that token as mismatched.
func (b *Batch) Share(child, parent, n int) {
	b.shares = append(b.shares, prefixShare{int32(child), int32(parent), int32(n)})
}

// sharedBatch is the batch ForwardTrain runs when sequences share prefixes:
// kept[i] is the original index of its token i, and table maps every
// (sequence, position) onto the token row that holds it, shared positions
// onto the parent's row.
type sharedBatch struct {
	b      Batch
	kept   []int32 // reduced index → original index
	remap  []int32 // original index → reduced index, −1 if dropped
	table  []int32 // slots × maxLen: the row of (sequence, position)
	maxLen int
}

// share resolves b's Share declarations against the rows to be scored
// (nil: every token). It returns nil when nothing is shared. For a model
// with linear-attention layers (linear) the reduced batch is cut for them
// as linearSplit says.
func (b *Batch) share(rows []int32, slots, maxLen int, linear bool) (*sharedBatch, error) {
	if len(b.shares) == 0 {
		return nil, nil
	}
	n := b.Len()
	at := make(map[[2]int32]int32, n) // (slot, position) → original index
	for i := range n {
		k := [2]int32{b.Slots[i], b.Positions[i]}
		if _, dup := at[k]; dup {
			return nil, fmt.Errorf("sequence %d has position %d twice in the batch", k[0], k[1])
		}
		at[k] = int32(i)
	}
	// A child's first scored position bounds what it can share: its scored
	// rows need their own logits.
	firstScored := make(map[int32]int32)
	note := func(i int32) {
		s, p := b.Slots[i], b.Positions[i]
		if f, ok := firstScored[s]; !ok || p < f {
			firstScored[s] = p
		}
	}
	if rows == nil {
		for i := range n {
			note(int32(i))
		}
	} else {
		for _, r := range rows {
			note(r)
		}
	}
	shared := make(map[int32]prefixShare, len(b.shares))
	children := make(map[int32]bool, len(b.shares))
	for _, sh := range b.shares {
		children[sh.child] = true
	}
	for _, sh := range b.shares {
		switch {
		case sh.child == sh.parent || sh.child < 0 || sh.parent < 0 || int(sh.child) >= slots || int(sh.parent) >= slots:
			return nil, fmt.Errorf("prefix share of sequence %d into %d: want two different sequences of the batch", sh.parent, sh.child)
		case children[sh.parent]:
			return nil, fmt.Errorf("prefix share into sequence %d from %d, which itself shares a prefix: share from the group's first sequence", sh.child, sh.parent)
		case shared[sh.child] != (prefixShare{}):
			return nil, fmt.Errorf("sequence %d shares a prefix twice", sh.child)
		}
		k := sh.n
		if f, ok := firstScored[sh.child]; ok {
			k = min(k, f)
		}
		for p := int32(0); p < k; p++ {
			ci, cok := at[[2]int32{sh.child, p}]
			pi, pok := at[[2]int32{sh.parent, p}]
			if !cok || !pok || b.Tokens[ci] != b.Tokens[pi] {
				return nil, fmt.Errorf("sequence %d declares its first %d positions shared with sequence %d, but position %d differs or is missing", sh.child, sh.n, sh.parent, p)
			}
		}
		shared[sh.child] = prefixShare{sh.child, sh.parent, k}
	}
	order := allRows(n)
	if linear {
		uniformPrompts(shared)
		order = promptsFirst(b, shared)
	}
	sb := &sharedBatch{remap: make([]int32, n), table: make([]int32, slots*maxLen), maxLen: maxLen}
	for i := range sb.table {
		sb.table[i] = -1
	}
	for _, i := range order {
		s, p := b.Slots[i], b.Positions[i]
		if sh, ok := shared[s]; ok && p < sh.n {
			sb.remap[i] = -1
			continue
		}
		sb.remap[i] = int32(len(sb.kept))
		sb.table[int(s)*maxLen+int(p)] = int32(len(sb.kept))
		sb.kept = append(sb.kept, int32(i))
		sb.b.Add(int(s), int(p), b.Tokens[i])
	}
	if b.Experts != nil {
		// One record per token (validated against the model before).
		per := len(b.Experts) / n
		sb.b.Experts = make([]int32, 0, len(sb.kept)*per)
		for _, i := range sb.kept {
			sb.b.Experts = append(sb.b.Experts, b.Experts[int(i)*per:int(i+1)*per]...)
		}
	}
	for _, sh := range shared {
		for p := range sh.n {
			sb.table[int(sh.child)*maxLen+int(p)] = sb.table[int(sh.parent)*maxLen+int(p)]
		}
	}
	if linear {
		// Without a group left (every share cut to 0 positions) the
		// batch is cut into runs as an unshared one.
		if sp := newLinearSplit(&sb.b, shared); sp.groups > 0 {
			sb.b.split = sp
		}
	}
	return sb, nil
}

// rows maps scored rows of the original batch onto the reduced one (they
// are all kept); nil stays nil only when nothing was dropped.
func (sb *sharedBatch) rows(rows []int32) []int32 {
	if rows == nil {
		rows = allRows(len(sb.remap))
	}
	out := make([]int32, len(rows))
	for i, r := range rows {
		out[i] = sb.remap[r]
	}
	return out
}

// cache is the trace's KV cache for the reduced batch: one block per token
// row (BlockSize 1), so a shared position is one table entry pointing at
// the parent's row. Physically the cache rows are the batch's rows in
// order, so each sequence's positions are at most two runs of consecutive
// rows (the shared prefix, its own tokens), which the kernels read as
// such.
//
// Its keys and values are in the trace's attention dtype, as
// newTrainCache's. With a linearSplit the cache also holds the groups' linear-attention
// states, one slot per group and every DeltaNet layer its own: the
// backward reads them as the continuations' initial states. A hybrid's
// attention layers keep their own keys and values, as in newTrainCache.
func (m *Model) traceCache(sb *sharedBatch, slots int) *KVCache {
	c := m.newCache(slots, sb.maxLen, 1, len(sb.kept), 0, m.traceAttention(), m.Config.traceCacheShared(m.checkpointedLayers()))
	if sb.b.split != nil {
		c.linear = m.newLinearStates(sb.b.split.groups)
	}
	c.fix(sb.table)
	return c
}
