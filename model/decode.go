package model

import (
	"fmt"
	"slices"

	"github.com/grpo-dev/grpo/kernels"
)

// Decoder runs static decode steps: one token for each of a fixed set of
// sequences per step, with every buffer the step touches allocated once
// per batch-size bucket (a workspace, grow-only) and the step's inputs
// kept on the device — each step's sampled ids are the next step's
// embedding lookup, positions advance by AddI32, the draws come from
// per-sequence random streams (SampleStream) — so after warm-up a step
// allocates nothing, frees nothing and uploads nothing but a block table
// when a sequence enters a new block. On a backend with kernels.Graphs the
// step is captured once per bucket and replayed; there a step is one graph
// launch plus the download of the tokens and log-probs.
//
// On a mixture-of-experts model each sparse layer writes the experts it
// routes to into its own range of the bucket's output buffer, after the
// tokens, so a step that records routing (StepRecording) brings the
// record back in the tokens' download: no launch and no wait more.
//
// Rows whose block tables start with the same blocks — a GRPO group's
// rollouts of one prompt — read those blocks once per group
// (kernels.AttentionSharedPrefix, decode_groups.go); the groups are
// found at Load and kept in the bucket's workspace.
//
// A bucket is the next power of two ≥ the row count, capped at the
// decoder's maxRows (with graphs; else the row count itself): rows beyond
// the sequences are padding that write only the padding slot's position 0,
// at temperature 0, and never advance.
//
// On a model whose experts are sharded over ranks the step exchanges
// each sparse layer's rows with fixed counts (decode_ep.go), so every
// rank loads the same bucket (LoadBucket) and steps together.
type Decoder struct {
	m        *Model
	maxRows  int
	graphErr error // a failed capture: steps run op by op
	buckets  map[int]*decodeBucket
	cur      *decodeBucket
	rows     []DecodeRow // the loaded sequences, positions advanced on the host as on the device
	pad      int32
	batch    Batch // the step's slots and positions, for the cache's block mapping
	// plainAttention turns off shared-prefix attention (decode_groups.go).
	plainAttention bool
	// Eager runs every step op by op, never capturing or replaying a
	// graph: a kernel profile (grpo bench --profile) times each launch
	// of a step this way, where a replay is one entry. It adds the launch
	// gaps a graph removes.
	Eager bool
}

// DecodeRow is one sequence of a decode step: its cache slot, the position
// its next token goes to, that token, its sampling parameters and its
// random stream (math/rand/v2 PCG state, see kernels.SampleStream).
type DecodeRow struct {
	Slot, Pos, Token int32
	Params           kernels.SampleParams
	PCGHi, PCGLo     uint64
}

// decodeBucket is the workspace of one bucket size.
type decodeBucket struct {
	rows                  int
	a                     *arena
	tok, slot, pos, delta kernels.Buffer // I32 rows
	// out is the step's I32 output, the one buffer a step downloads: tok
	// (its first rows), then each sparse layer's routed experts (rows × k
	// each, in routing), layer after layer; tok alone on a dense model.
	out           kernels.Buffer
	routing       layerRouting
	params, state kernels.Buffer // I32 rows × SampleParamWords, rows × PCGWords
	// groups is AttentionSharedPrefix's operand (rows × PrefixGroupWords),
	// used while shared: some loaded rows read a shared prompt
	// (loadGroups); sharedRows is how many.
	groups     kernels.Buffer
	shared     bool
	sharedRows int
	lp         kernels.Buffer // F32 rows
	// runs is the linear-attention layers' runs (rows × 4, decodeRuns);
	// nil for a model without them.
	runs      kernels.Buffer
	x, logits kernels.Buffer
	acts      *layerActs
	// graph, graphCache and eager are per attention mode (mode: plain or
	// shared-prefix, which read different operands): the captured graph,
	// the cache it was captured over, and the steps run op by op in that
	// mode. Keeping both lets a bucket alternate between batches with
	// and without groups without recapturing.
	graph                 [2]kernels.Graph
	graphCache            [2]*KVCache
	eager                 [2]int
	hostOut               []int32 // out on the host; hostTok is its first rows
	used                  bool    // loaded since the last DropUnused
	hostTok               []int32
	hostParams, hostState []int32
}

// NewDecoder returns a decoder over m (its adapter included; make a new
// one after changing it) for steps of up to maxRows sequences.
func (m *Model) NewDecoder(maxRows int) *Decoder {
	return &Decoder{m: m, maxRows: maxRows, buckets: map[int]*decodeBucket{}, pad: -1}
}

// SetMaxRows makes later Loads take up to n rows and cap the buckets at
// n, as NewDecoder(n) would: a sampler reused for fewer slots than it was
// built with pads its steps as a new one of that size does. Buckets already
// made stay, graphs included, for steps that choose them again.
func (d *Decoder) SetMaxRows(n int) { d.maxRows = max(1, n) }

// DropUnused frees the buckets not loaded since the last call (workspace
// and graph) unless keep(rows) says otherwise. A step loaded without a
// padding slot runs a bucket of its exact row count, and one capped at an
// earlier maxRows is of that size, so a decoder kept across many batches
// could gather buckets no later step chooses; dropping those a batch did
// not use bounds them. (The sampler always pads, with a slot of its own.)
func (d *Decoder) DropUnused(keep func(rows int) bool) {
	g, _ := d.m.Backend.(kernels.Graphs)
	for n, b := range d.buckets {
		if !b.used && !keep(n) {
			b.freeGraphs(g)
			b.a.free()
			delete(d.buckets, n)
			if d.cur == b {
				d.cur = nil
			}
		}
		b.used = false
	}
}

// Buckets is the row counts of the workspaces the decoder holds, in
// increasing order.
func (d *Decoder) Buckets() []int {
	out := make([]int, 0, len(d.buckets))
	for n := range d.buckets {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Bucket is the rows a step of n sequences runs: more than n means it
// needs a padding slot (Load).
func (d *Decoder) Bucket(n int) int { return d.bucketFor(n) }

// Logits is the last step's logits, Bucket(rows) × vocab on the device
// (the caller names a flagged row's bad value from it).
func (d *Decoder) Logits() kernels.Buffer {
	if d.cur == nil {
		return nil
	}
	return d.cur.logits
}

// Free releases the workspaces and graphs.
func (d *Decoder) Free() {
	g, _ := d.m.Backend.(kernels.Graphs)
	for _, b := range d.buckets {
		b.freeGraphs(g)
		b.a.free()
	}
	d.buckets, d.cur = map[int]*decodeBucket{}, nil
}

// freeGraphs releases the bucket's graphs of both modes (g nil: a
// backend without graphs, which has none).
func (b *decodeBucket) freeGraphs(g kernels.Graphs) {
	for i, gr := range b.graph {
		if gr != nil && g != nil {
			g.FreeGraph(gr)
		}
		b.graph[i] = nil
	}
}

// mode indexes the bucket's per-mode state: 1 while its rows read a
// shared prompt through groups, else 0.
func (b *decodeBucket) mode() int {
	if b.shared {
		return 1
	}
	return 0
}

// bucketFor is the workspace size for n rows.
func (d *Decoder) bucketFor(n int) int {
	if _, ok := d.m.Backend.(kernels.Graphs); !ok {
		return n
	}
	b := 1
	for b < n {
		b <<= 1
	}
	return max(n, min(b, d.maxRows))
}

// Load makes rows the sequences of the next steps, uploading their
// tokens, slots, positions, parameters and random streams. padSlot is a
// slot no sequence uses: padding rows (up to the bucket size) write its
// position 0. With padSlot < 0 the step runs exactly len(rows) rows.
func (d *Decoder) Load(cache *KVCache, rows []DecodeRow, padSlot int) error {
	return d.load(cache, rows, padSlot, 0)
}

// LoadBucket is Load with the step's bucket given: n rows (at least one,
// at least len(rows), at most the decoder's maxRows), those beyond rows
// padding at padSlot. Under expert parallelism every rank's steps must
// run the same bucket, agreed on before the ranks load (the sampler's
// lockstep), and a rank with no sequence left runs steps of padding only
// (rows empty) while others decode.
func (d *Decoder) LoadBucket(cache *KVCache, rows []DecodeRow, padSlot, n int) error {
	if n < max(1, len(rows)) || n > d.maxRows || (n > len(rows) && padSlot < 0) {
		return fmt.Errorf("decode step of %d sequences in a bucket of %d (padding slot %d): want 1..%d rows, padded only with a padding slot", len(rows), n, padSlot, d.maxRows)
	}
	return d.load(cache, rows, padSlot, n)
}

// load is Load into a bucket of n rows (0: the decoder's choice).
func (d *Decoder) load(cache *KVCache, rows []DecodeRow, padSlot, bucket int) error {
	c := d.m.Config
	if c.LinearLayers() > 0 && cache.linear == nil {
		return fmt.Errorf("decode step: the cache keeps no linear-attention states (a training trace's)")
	}
	if (len(rows) == 0 && bucket == 0) || len(rows) > d.maxRows {
		return fmt.Errorf("decode step of %d sequences: want 1..%d", len(rows), d.maxRows)
	}
	for i, r := range rows {
		switch {
		case r.Token < 0 || int(r.Token) >= c.VocabSize:
			return fmt.Errorf("decode row %d: token %d outside the vocabulary [0, %d)", i, r.Token, c.VocabSize)
		case r.Slot < 0 || int(r.Slot) >= cache.Slots || int(r.Slot) == padSlot:
			return fmt.Errorf("decode row %d: slot %d outside the cache's %d slots or the padding slot", i, r.Slot, cache.Slots)
		case r.Pos < 0 || int(r.Pos) >= cache.MaxLen:
			return fmt.Errorf("decode row %d: position %d beyond the cache length %d", i, r.Pos, cache.MaxLen)
		}
		if err := r.Params.Validate(); err != nil {
			return fmt.Errorf("decode row %d: %w", i, err)
		}
	}
	n := d.bucketFor(len(rows))
	if bucket > 0 {
		n = bucket
	}
	if padSlot < 0 {
		n = len(rows) // no padding slot: a bucket of the exact size
	} else if padSlot >= cache.Slots {
		return fmt.Errorf("decode step: padding slot %d is outside the cache's %d slots", padSlot, cache.Slots)
	}
	b := d.buckets[n]
	if b == nil {
		b = d.newBucket(n)
		d.buckets[n] = b
	}
	b.used = true
	d.cur, d.rows, d.pad = b, append(d.rows[:0], rows...), int32(padSlot)
	slot, pos, delta := make([]int32, n), make([]int32, n), make([]int32, n)
	p := make([]kernels.SampleParams, n)
	for i := range n {
		if i < len(rows) {
			r := rows[i]
			b.hostTok[i], slot[i], pos[i], delta[i], p[i] = r.Token, r.Slot, r.Pos, 1, r.Params
			kernels.PackPCG(b.hostState[i*kernels.PCGWords:], r.PCGHi, r.PCGLo)
			continue
		}
		// Padding: greedy, at the padding slot's position 0, never moving.
		var tok int32
		if len(rows) > 0 {
			tok = rows[0].Token
		}
		b.hostTok[i], slot[i], pos[i], delta[i], p[i] = tok, int32(padSlot), 0, 0, kernels.SampleParams{TopP: 1}
		kernels.PackPCG(b.hostState[i*kernels.PCGWords:], 0, 0)
	}
	kernels.PackSampleParams(b.hostParams, p, c.VocabSize)
	be := d.m.Backend
	be.UploadI32(b.tok, b.hostTok)
	be.UploadI32(b.slot, slot)
	be.UploadI32(b.pos, pos)
	be.UploadI32(b.delta, delta)
	be.UploadI32(b.params, b.hostParams)
	be.UploadI32(b.state, b.hostState)
	if b.runs != nil {
		be.UploadI32(b.runs, decodeRuns(slot, pos, len(rows)))
	}
	d.loadGroups(cache, b, slot, pos)
	return nil
}

// decodeRuns is a decode step's runs for the linear-attention layers
// (kernels.LinearOps): each row a run of its one token continuing its
// slot's state (a fresh one at position 0), padding rows (from real on)
// fresh and keeping nothing, since they share one slot. The runs stay
// valid as positions advance on the device: a row past position 0
// continues its own slot.
func decodeRuns(slot, pos []int32, real int) []int32 {
	runs := make([]int32, 4*len(slot))
	for i := range slot {
		init, final := slot[i], slot[i]
		if pos[i] == 0 {
			init = -1
		}
		if i >= real {
			init, final = -1, -1
		}
		copy(runs[4*i:], []int32{int32(i), 1, init, final})
	}
	return runs
}

// newBucket allocates the workspace of n rows: the step's index arrays,
// its activations (as Forward's, for n tokens), the LoRA shrink outputs
// (sized for the largest rank of any layer) and the logits.
func (d *Decoder) newBucket(n int) *decodeBucket {
	m, be, c := d.m, d.m.Backend, d.m.Config
	a := &arena{be: be}
	b := &decodeBucket{rows: n, a: a}
	// The inference set's x is the bucket's embedded input, allocated with
	// the bucket's own buffers (decodeBucketSpecs).
	var x kernels.Buffer
	// f32 between ops, by design: a decode step reads every weight and
	// each row's keys and values once per token, and its activations are
	// a few per mille of that (Qwen3-8B at 128 rows: ~40 MB against 16 GB
	// of weights), while an f32 q keeps attention on the split-KV decode
	// kernels, which read a KV head once for all its query heads; a bf16
	// q would take the tensor-core flash kernel's 64-row tiles for one
	// query row (forwardAttention).
	b.acts = m.inferenceActs(a, x, n, kernels.F32)
	ad := m.adapterShape()
	c.decodeBucketSpecs(b, b.acts, n, &ad).alloc(a)
	b.acts.xIn, b.acts.xMid, b.acts.xOut = b.x, b.x, b.x
	b.tok = b.out.Slice(0, n)
	b.hostOut, b.hostParams, b.hostState = make([]int32, b.out.Len()), make([]int32, n*kernels.SampleParamWords), make([]int32, n*kernels.PCGWords)
	b.hostTok = b.hostOut[:n]
	b.routing = m.decodeRouting(b.out, n, c.epRanks()*n)
	if m.ep != nil {
		b.acts.moe.gathered = m.newGatheredMoE(a, n, &ad)
	}
	return b
}

// Step runs one decode step over the loaded rows and writes each row's
// sampled token and its log-prob into tok and lp (len(rows) each). The
// cache blocks of the new positions are mapped first (on the host; the
// table is uploaded only if that took a block). The first step of a bucket
// after Load runs op by op; the next is captured, and later ones replay
// the graph. A token of −1 flags a row whose logits hold NaN or +Inf or
// no finite value (as Sample); Step returns it for the caller to report.
func (d *Decoder) Step(cache *KVCache, tok []int32, lp []float32) error {
	return d.StepRecording(cache, tok, lp, nil)
}

// StepRecording is Step that also writes into experts, when not nil, the
// experts each row's token was routed to, in Batch.RecordExperts' layout
// (Config.RoutingLen(rows) entries, as Forward records them). The record
// comes back in the tokens' download.
func (d *Decoder) StepRecording(cache *KVCache, tok []int32, lp []float32, experts []int32) error {
	b := d.cur
	if b == nil {
		return fmt.Errorf("decode step before Load")
	}
	if len(tok) != len(d.rows) || len(lp) != len(d.rows) {
		return fmt.Errorf("decode step of %d rows into %d tokens and %d log-probs", len(d.rows), len(tok), len(lp))
	}
	if experts != nil {
		if want := d.m.Config.RoutingLen(len(d.rows)); want == 0 || len(experts) != want {
			return fmt.Errorf("decode step of %d rows recording routing into %d entries; the model (%s, %d sparse layers × %d experts per token) needs %d",
				len(d.rows), len(experts), d.m.Config.ModelType, d.m.Config.SparseLayers(), d.m.Config.NumExpertsPerTok, want)
		}
	}
	m, be := d.m, d.m.Backend
	bt := &d.batch
	bt.Slots, bt.Positions = bt.Slots[:0], bt.Positions[:0]
	for _, r := range d.rows {
		if int(r.Pos) >= cache.MaxLen {
			return fmt.Errorf("decode step: slot %d is full (position %d, cache length %d)", r.Slot, r.Pos, cache.MaxLen)
		}
		bt.Slots, bt.Positions = append(bt.Slots, r.Slot), append(bt.Positions, r.Pos)
	}
	if len(d.rows) < b.rows {
		bt.Slots, bt.Positions = append(bt.Slots, d.pad), append(bt.Positions, 0)
	}
	if err := cache.mapBatch(bt); err != nil {
		return err
	}
	pages := [2]kernels.KVPages{cache.Pages(), cache.windowPages()}
	g, graphs := be.(kernels.Graphs)
	graphs = graphs && !d.Eager
	mode := b.mode()
	switch {
	case graphs && b.graph[mode] != nil && b.graphCache[mode] == cache:
		g.Replay(b.graph[mode])
	case graphs && b.eager[mode] > 0 && d.graphErr == nil:
		if b.graph[mode] != nil {
			g.FreeGraph(b.graph[mode])
			b.graph[mode] = nil
		}
		gr, err := d.capture(g, b, cache, pages)
		if err != nil {
			// A device that cannot capture this step still runs it: op by
			// op from now on, the reason kept for GraphErr.
			d.graphErr = err
			m.decodeOps(b, cache, pages)
			break
		}
		b.graph[mode], b.graphCache[mode] = gr, cache
		g.Replay(gr)
	default:
		m.decodeOps(b, cache, pages)
		b.eager[mode]++
	}
	n := len(d.rows)
	if experts != nil {
		be.DownloadI32(b.hostOut, b.out)
	} else {
		be.DownloadI32(b.hostTok, b.tok)
	}
	if n > 0 {
		be.Download(lp, b.lp.Slice(0, n))
	}
	if err := be.Sync(); err != nil {
		return fmt.Errorf("decode step on %s: %w", be.Name(), err)
	}
	if err := m.exchangeErr(); err != nil {
		return fmt.Errorf("decode step: %w", err)
	}
	copy(tok, b.hostTok[:n])
	if experts != nil {
		// Each layer's record holds every rank's bucket under expert
		// parallelism (decode_ep.go), this rank's rows at its place.
		first := b.rows
		if m.ep != nil {
			first += m.ep.coll.Rank() * b.rows * m.Config.NumExpertsPerTok
		}
		d.m.Config.routingRows(experts, b.hostOut[first:], n, m.Config.epRanks()*b.rows)
	}
	for i := range d.rows {
		d.rows[i].Pos++
	}
	for i := n; i < b.rows; i++ {
		if b.hostTok[i] < 0 {
			return fmt.Errorf("decode step: a padding row's logits hold NaN or overflow: the weights or the adapter are broken")
		}
	}
	return nil
}

// capture records one step into a graph.
func (d *Decoder) capture(g kernels.Graphs, b *decodeBucket, cache *KVCache, pages [2]kernels.KVPages) (kernels.Graph, error) {
	if err := g.BeginCapture(); err != nil {
		return nil, fmt.Errorf("decode step: %w", err)
	}
	d.m.decodeOps(b, cache, pages)
	gr, err := g.EndCapture()
	if err != nil {
		return nil, fmt.Errorf("decode step: %w", err)
	}
	return gr, nil
}

// GraphErr is why the decoder runs its steps op by op on a backend with
// graphs (a capture failed), or nil.
func (d *Decoder) GraphErr() error { return d.graphErr }

// decodeOps queues one step: embedding of the current tokens, the layers,
// the final norm and LM head over every row, SampleStream into the token
// buffer (the next step's input) and the positions' advance. pages are
// the cache's two tables (Pages, windowPages), whose buffers a captured
// graph holds.
func (m *Model) decodeOps(b *decodeBucket, cache *KVCache, pages [2]kernels.KVPages) {
	be, c := m.Backend, m.Config
	n, h := b.rows, c.HiddenSize
	idx := batchIndex{tokens: b.tok, slots: b.slot, pos: b.pos, pages: pages[0], windowPages: pages[1], runs: b.runs}
	if b.runs != nil {
		idx.nRuns = n
	}
	if b.shared {
		idx.groups = b.groups
	}
	be.GatherRows(b.x, m.W.Embed, b.tok, n, h)
	for l := range m.W.Layers {
		if b.routing != nil && b.routing[l] != nil {
			b.acts.moe.useRouting(nil, b.routing[l], false)
		}
		prev := b.acts // each layer's closing residual add is the next one's first norm (layerForward)
		if l == 0 {
			prev = nil
		}
		m.layerForward(nil, l, cache, idx, n, b.acts, prev)
	}
	// The last layer's residual add is fused into the final norm, as
	// Forward does for a decode step; h1 (and its bf16 cast) are dead by
	// then and hold the LM head's input.
	normed, normedB := b.acts.h1, b.acts.h1b
	be.AddRMSNorm(b.x, normed, normedB, nil, b.acts.xMid, b.acts.o, m.W.Norm, n, h, float32(c.RMSNormEps))
	be.MatMul(b.logits, gemmInput(normed, normedB), m.W.LMHead, n, c.VocabSize, h, false, true, 1, 0)
	be.SampleStream(b.tok, b.lp, b.logits, b.params, b.state, n, c.VocabSize)
	be.AddI32(b.pos, b.pos, b.delta, n)
}
