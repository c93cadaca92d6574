package model

import (
	"fmt"

	"github.com/grpo-dev/grpo/kernels"
)

// Trace is what a training forward keeps for Backward: every layer's
// activations, and for the scored rows the final norm's input and
// statistics, the logits, and the log-probabilities and entropies of the
// targets. Free releases it all.
type Trace struct {
	m         *Model
	a         *arena
	n, r      int // tokens in the batch; scored rows
	idx       batchIndex
	cache     *KVCache
	layers    []*layerActs   // what each layer keeps, by its recompute policy
	recompute []Recompute    // each layer's policy (m.layerRecompute)
	ad        AdapterShape   // the adapter's ranks, which size the buffers of its x·Aᵀ and dy·B
	moe       *moeScratch    // the sparse layers' shared forward scratch (a checkpointed one's rerun too)
	rows      kernels.Buffer // batch index of each scored row; nil: every token, in order
	xFinal    kernels.Buffer // the final norm's input, scored rows only (r × hidden)
	rstdF     kernels.Buffer
	logits    kernels.Buffer
	targets   kernels.Buffer
	dprobs    kernels.Buffer // the load-balancing loss's router gradient, during Backward
	// Logp[i] = log p(targets[i] | tokens ≤ rows[i]) and Entropy[i] is the
	// entropy of the distribution at scored row i. Both Rows() long, on the
	// backend.
	Logp, Entropy kernels.Buffer
	// AuxCoef, when not 0, adds AuxCoef × the load-balancing loss of the
	// traced batch (HF's router_aux_loss_coef × load_balancing_loss_func
	// over its tokens and sparse layers) to what Backward differentiates;
	// set it before Backward, for a model whose routers are adapted
	// (Model.TrainsRouter). Backward then sets AuxLoss to the loss's value
	// (without the coefficient).
	AuxCoef float32
	AuxLoss float64
	// RoutingMismatch is, when the batch replays a recorded routing
	// (Batch.Experts), the fraction of its tokens whose top-k recomputed
	// by this forward differs from the replayed one in some sparse layer.
	// With shared prefixes (Batch.Share) it is over the batch's tokens as
	// given: a child's shared token, which replays the parent's row, also
	// counts when its own record differs from the parent's.
	RoutingMismatch float64
}

// ForwardTrain runs a training forward over a packed batch and scores the
// tokens listed in rows (distinct indices into the batch, in any order; nil
// means every token): row i's logits are scored against targets[i], the
// token that follows token rows[i]. Only scored rows get the LM head and
// log-softmax, forward and backward — with a 150k vocabulary the largest
// GEMM of a step — so a caller passes the rows that carry loss and leaves
// out the prompt's. Each sequence has its own slot and positions from 0,
// and the trace owns a KV cache sized for the batch. The returned error
// covers the inputs; the work is queued, and an error of the device's
// comes back from the backend's next Sync (after the caller's downloads).
func (m *Model) ForwardTrain(b *Batch, rows, targets []int32) (*Trace, error) {
	c := m.Config
	r := b.Len()
	if rows != nil {
		r = len(rows)
		seen := make(map[int32]bool, r)
		for _, t := range rows {
			if t < 0 || int(t) >= b.Len() || seen[t] {
				return nil, fmt.Errorf("scored row %d is outside the batch of %d tokens or listed twice", t, b.Len())
			}
			seen[t] = true
		}
	}
	if len(targets) != r {
		return nil, fmt.Errorf("%d targets for %d scored rows", len(targets), r)
	}
	for i, t := range targets {
		if t < 0 || int(t) >= c.VocabSize {
			return nil, fmt.Errorf("target %d at index %d is outside the vocabulary [0, %d)", t, i, c.VocabSize)
		}
	}
	slots, maxLen := 0, 0
	for i := range b.Slots {
		slots, maxLen = max(slots, int(b.Slots[i])+1), max(maxLen, int(b.Positions[i])+1)
	}
	if slots == 0 || r == 0 {
		return nil, fmt.Errorf("empty batch or no rows to score")
	}
	if err := b.validateRouting(c); err != nil {
		return nil, err
	}
	var sb *sharedBatch
	if !m.NoPrefixSharing {
		if c.LinearLayers() > 0 && len(b.shares) > 0 {
			// The split into prompts and continuations
			// (trainshare_linear.go) takes each sequence as one run
			// from position 0, as an unshared trace does.
			if _, err := b.runs(false); err != nil {
				return nil, err
			}
		}
		var err error
		if sb, err = b.share(rows, slots, maxLen, c.LinearLayers() > 0); err != nil {
			return nil, err
		}
	}
	orig := b
	var cache *KVCache
	if sb != nil {
		b, rows = &sb.b, sb.rows(rows)
		cache = m.traceCache(sb, slots)
	} else {
		cache = m.newTrainCache(slots, maxLen)
	}
	if err := b.validate(c, cache); err != nil {
		cache.Free()
		return nil, err
	}
	be := m.Backend
	tr := &Trace{m: m, a: &arena{be: be}, n: b.Len(), r: r, cache: cache, recompute: m.layerRecompute(), ad: m.adapterShape()}
	a, n, h, v := tr.a, b.Len(), c.HiddenSize, c.VocabSize
	tr.idx = b.upload(be, a, cache)
	var x kernels.Buffer
	c.traceInputSpecs(tr, &x, n, r, rows != nil).alloc(a)
	be.UploadI32(tr.targets, targets)
	if rows != nil {
		be.UploadI32(tr.rows, rows)
	}
	be.GatherRows(x, m.W.Embed, tr.idx.tokens, n, h)
	shared := m.sharedTrainingActs(a, n)
	routing := m.newRouting(a, b)
	if c.SparseLayers() > 0 {
		tr.moe = m.newMoEScratch(a, n)
	}
	var prev *layerActs
	for l := range m.W.Layers {
		// What the backward recomputes lives only through the layer's forward.
		tmp := &arena{be: be}
		s := m.forwardActs(a, tmp, l, x, shared, n, &tr.ad, tr.recompute[l])
		m.layer(l).channel.traceActs(m, a, tmp, l, n, s, &tr.ad, routing.layer(l), tr.moe, b.Experts != nil, tr.recompute[l])
		m.layerForward(a, l, cache, tr.idx, n, s, prev)
		prev = s
		if closesOwnLayer(tr.recompute[l]) {
			m.finishLayers(s, n)
			prev = nil
		}
		tmp.free()
		tr.layers = append(tr.layers, m.kept(l, s, tr.recompute[l]))
		x = s.xOut
	}
	var hF, hFb kernels.Buffer
	c.traceHeadSpecs(tr, &hF, &hFb, r, tr.rows != nil, m.castsBF16()).alloc(a)
	eps := float32(c.RMSNormEps)
	switch {
	case tr.rows == nil && prev != nil:
		// Every token scored: the last layer's residual add is fused into
		// the final norm.
		tr.xFinal = x
		be.AddRMSNorm(x, hF, hFb, tr.rstdF, prev.xMid, prev.o, m.W.Norm, n, h, eps)
	case tr.rows == nil:
		// The last layer closed its own add (closesOwnLayer).
		tr.xFinal = x
		be.AddRMSNorm(nil, hF, hFb, tr.rstdF, x, nil, m.W.Norm, n, h, eps)
	default:
		m.finishLayers(prev, n)
		be.GatherRows(tr.xFinal, x, tr.rows, r, h)
		be.AddRMSNorm(nil, hF, hFb, tr.rstdF, tr.xFinal, nil, m.W.Norm, r, h, eps)
	}
	be.MatMul(tr.logits, gemmInput(hF, hFb), m.W.LMHead, r, v, h, false, true, 1, 0)
	be.LogSoftmaxGather(tr.Logp, tr.Entropy, tr.logits, tr.targets, r, v)
	// An expert-parallel exchange that failed kept its error (moe_ep.go).
	if err := m.exchangeErr(); err != nil {
		tr.Free()
		return nil, err
	}
	// No Sync: the forward stays queued, so a micro-batch's forward and
	// backward make the host wait for nothing (on a GPU the host runs
	// ahead); a device error surfaces at the caller's next Sync, where it
	// reads the loss back. A batch that replays a recorded routing is the
	// exception: RoutingMismatch is a host value, computed here from the
	// recomputed and replayed top-k read back, so that forward waits (as
	// Backward does for the load-balancing loss, Trace.AuxCoef).
	if b.Experts != nil {
		if err := be.Sync(); err != nil {
			tr.Free()
			return nil, fmt.Errorf("training forward on %s: %w", be.Name(), err)
		}
		tr.RoutingMismatch = tr.routingMismatch(orig, sb)
	}
	return tr, nil
}

// Len is the number of tokens in the traced batch.
func (tr *Trace) Len() int { return tr.n }

// Rows is the number of scored rows: the length of Logp, Entropy and
// Backward's dlogp.
func (tr *Trace) Rows() int { return tr.r }

// Free releases the trace's buffers and cache.
func (tr *Trace) Free() {
	tr.a.free()
	tr.cache.Free()
}

// Backward propagates dlogp (Rows() values: the loss gradient with respect
// to each scored row's Logp) back through the model and adds the gradients
// of every LoRA parameter into its DA and DB. Frozen weights get no
// gradient; unscored rows get none from the head, only through attention.
// The work is queued: a device error comes back from the backend's next
// Sync.
func (tr *Trace) Backward(dlogp kernels.Buffer) error {
	m, be, c := tr.m, tr.m.Backend, tr.m.Config
	n, r, h, v := tr.n, tr.r, c.HiddenSize, c.VocabSize
	// Scratch is freed as soon as it is dead: the head's (r × vocab) before
	// the layers run, each layer's before the next, so the peak is the
	// larger of the head's and one layer's, not their sum.
	head, rest := &arena{be: be}, &arena{be: be}
	defer rest.free()
	var dlogits, dhF, dx, dxb kernels.Buffer
	c.lmHeadGradSpecs(&dlogits, &dhF, r, m.castsBF16() && m.W.LMHead.DType() == kernels.BF16).alloc(head)
	c.residualGradSpecs(&dx, &dxb, n, m.traceAttention()).alloc(rest)
	be.LogSoftmaxGatherBackward(dlogits, dlogp, tr.logits, tr.targets, r, v)
	be.MatMul(dhF, dlogits, m.W.LMHead, r, h, v, false, false, 1, 0)
	// grad is the residual gradient as the layers' blocks read it: its
	// bf16 copy dxb once a norm's backward has written it (bf16 layers,
	// trace_acts.go), else dx.
	grad := residualGrad{dx: dx, dxb: dxb}
	if tr.rows == nil {
		be.RMSNormBackward(dx, dxb, dhF, tr.xFinal, m.W.Norm, tr.rstdF, n, h, false)
		grad.fresh = dxb != nil
	} else {
		be.RMSNormBackward(dhF, nil, dhF, tr.xFinal, m.W.Norm, tr.rstdF, r, h, false)
		be.ScatterRows(dx, dhF, tr.rows, r, h)
	}
	head.free()
	var dprobs kernels.Buffer
	if tr.AuxCoef != 0 && c.SparseLayers() > 0 {
		aux, grad, err := tr.loadBalance()
		if err != nil {
			return err
		}
		tr.AuxLoss = aux
		for i := range grad {
			grad[i] *= tr.AuxCoef
		}
		c.loadBalanceGradSpecs(&dprobs).alloc(rest)
		be.Upload(dprobs, grad)
	}
	tr.dprobs = dprobs
	for l := len(tr.layers) - 1; l >= 0; l-- {
		layer := &arena{be: be}
		tr.layerBackward(layer, l, tr.backwardActs(layer, l), &grad, l > 0)
		layer.free()
	}
	// No Sync, as in ForwardTrain: the caller's next Sync reports a
	// device error of the queued backward (or a failed expert-parallel
	// exchange, here).
	return m.exchangeErr()
}

// layerBackward turns dx, the gradient of layer l's output, into the
// gradient of its input (when needInput; the first layer's input is the
// frozen embedding), accumulating LoRA gradients on the way: the channel
// mixer's backward and its norm's, then the token mixer's and its norm's
// (block.go). s holds the layer's activations (backwardActs: kept or
// recomputed). Its scratch (layerGradSpecs) comes from a at the start.
func (tr *Trace) layerBackward(a *arena, l int, s *layerActs, grad *residualGrad, needInput bool) {
	m, be, c := tr.m, tr.m.Backend, tr.m.Config
	w, d := &m.W.Layers[l], m.layer(l)
	n, h := tr.n, c.HiddenSize
	attn := m.traceAttention()
	var g layerGrads
	cacheRows, groups := tr.gradShape(l)
	c.layerGradSpecs(&g, l, n, cacheRows, groups, &tr.ad, needInput, attn).alloc(a)
	bf16, dx := c.isBF16Layer(l, attn), grad.dx
	// A layer of one block has one norm (layerForward): its xMid is xIn,
	// and the gradient through that norm is wanted only when needInput.
	if d.hasChannel() {
		dh2 := d.channel.backward(tr, l, s, &g, grad.read(bf16))
		if d.hasMixer() || needInput {
			be.RMSNormBackward(dx, grad.dxb, dh2, s.xMid, w.PostAttnNorm, s.rstd2, n, h, true)
			grad.fresh = grad.dxb != nil
		}
	}
	if d.hasMixer() {
		dh1 := d.mixer.backward(tr, l, s, &g, grad.read(bf16), needInput)
		if needInput {
			be.RMSNormBackward(dx, grad.dxb, dh1, s.xIn, w.InputNorm, s.rstd1, n, h, true)
			grad.fresh = grad.dxb != nil
		}
	}
}

// residualGrad is the backward's gradient of the residual stream: dx,
// and in a trace with bf16 layers its bf16 copy dxb (residualGradSpecs),
// which every norm's backward rewrites with dx; fresh is whether it holds
// dx now (not after the scored rows' scatter, which writes dx alone).
type residualGrad struct {
	dx, dxb kernels.Buffer
	fresh   bool
}

// read is the gradient a block of a bf16 layer (bf16) or of another
// reads: the bf16 copy when it is current, else dx.
func (g *residualGrad) read(bf16 bool) kernels.Buffer {
	if bf16 && g.fresh {
		return g.dxb
	}
	return g.dx
}

// gradShape is what layer l's backward scratch takes from the trace's
// cache: the rows of its keys and values (0 in a DeltaNet layer), and the
// shared prompts whose DeltaNet states it holds (0 without).
func (tr *Trace) gradShape(l int) (cacheRows, groups int) {
	c := tr.m.Config
	if k := tr.cache.K[l]; k != nil {
		cacheRows = k.Len() / c.KVWidth()
	}
	if conv, _ := tr.cache.linear.layer(l); conv != nil {
		groups = conv.Len() / c.ConvStateWidth()
	}
	return cacheRows, groups
}

// projectBackward is the backward of project: given dy (n × out) it writes
// (or, with accumulate, adds) dx = dy·W + Scale·(dy·B)·A, skipped when dx is
// nil, and adds Scale·dyᵀ·xa into DB and Scale·(dy·B)ᵀ·x into DA; dxa (n ×
// rank, nil when p is not adapted) receives dy·B.
func (m *Model) projectBackward(layer int, p Proj, dx, dy, x, w kernels.Buffer, n int, xa, dxa kernels.Buffer, accumulate bool) {
	be := m.Backend
	inDim, outDim := m.Config.Dims(p)
	var beta float32
	if accumulate {
		beta = 1
	}
	if dx != nil {
		be.MatMul(dx, dy, w, n, inDim, outDim, false, false, 1, beta)
	}
	lr := m.lora(layer, p)
	if lr == nil {
		return
	}
	be.LoRAExpandBackward(dxa, xa, []kernels.LoRAPart{lr.part(outDim, dy, outDim, 0)}, n)
	be.LoRAShrinkBackward(dx, lr.DA, dxa, x, lr.A, n, inDim, lr.Rank)
}
