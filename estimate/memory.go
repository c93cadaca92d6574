package estimate

import (
	"fmt"
	"math"
	"strings"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cuda"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/rollout"
)

// Estimate is what a run will need before it starts: parameter counts, the
// memory the backend will hold (itemised, by phase) and, when measured, the
// time per step. Memory computes the memory from the config and the
// model's shape alone; Run also resolves the model and environments,
// measures a warm-up and reads the free memory.
type Estimate struct {
	Model  string
	Device string
	// BaseParams counts the frozen model (a tied head once);
	// TrainableParams the LoRA matrices.
	BaseParams, TrainableParams int64
	// WeightBytes is what the backend stores per base weight (its
	// kernels.Description): 4 (f32) on the CPU, 2 on cuda for a bf16
	// checkpoint.
	WeightBytes int
	Items       []MemItem
	// Peak is the most memory held at once: every resident item plus the
	// largest phase (PeakPhase), since phases free their buffers before the
	// next begins.
	Peak      int64
	PeakPhase string
	// Assumptions are what the numbers rest on, in words.
	Assumptions []string
	// Time is the measured step time; nil when not measured.
	Time *StepTime
	// Available is the free memory of the device; nil when not read.
	Available *Available
	// KV is the sampler's KV-cache plan of the phases that sample
	// (sampling, and eval when counted), for their largest environment.
	KV []KVPlan
	// Recompute is the policy the training items are sized for: the
	// config's, or with recompute = "auto" the one chooseRecompute picked;
	// RecomputeWhy says why, and Recomputes lists the cost of each policy
	// and of the chosen setting.
	Recompute        model.Recompute
	CheckpointLayers int    // the last layers checkpointed, as model.Model's
	RecomputeSetting string // the config value: "layer:12"
	RecomputeWhy     string
	Recomputes       []RecomputeCost
	// TrainFLOPs is one training micro-batch's forward and backward
	// without recompute (perTokenLayerFLOPs, and the LM head's 4·h·vocab
	// per scored row).
	TrainFLOPs float64
	// ExpertParallel is how many devices the routed experts are split
	// over (1: each device holds the whole model); ep is that shard.
	ExpertParallel int
	ep             expertShard
	// casts is whether forwards write bf16 casts of their GEMMs' inputs.
	casts bool
}

// MemItem is one line of the memory estimate.
type MemItem struct {
	// Phase is PhaseResident or the phase of a step that holds it.
	Phase  string `json:"phase"`
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	Detail string `json:"detail,omitempty"` // the shape behind the number
}

// The phases of a run. Resident memory lives for the whole run; each other
// phase frees what it allocated before the next starts.
const (
	PhaseResident = "resident"
	PhaseSampling = "sampling"
	PhaseTraining = "training"
	PhaseEval     = "eval"
)

// EnvShape is what memory sizing needs to know about one environment's
// share of a step (or of an eval).
type EnvShape struct {
	Name string
	// Examples played at once and Rollouts of each: the sampler's slots
	// are Examples × Rollouts.
	Examples, Rollouts int
	// PromptTokens is the longest rendered prompt; 0 means unknown, and
	// AssumedPromptTokens is used. It sizes memory (the KV cache fits the
	// longest); MeanPromptTokens, when known, sizes time.
	PromptTokens, MeanPromptTokens int
	// MaxTurns is the most model turns of an episode (1 for single-turn).
	MaxTurns int
	// MaxTokens caps each model turn ([sampling] or [eval.sampling]).
	MaxTokens int
	// ReplyTokens is the room kept for the environment's reply between
	// turns (rollout.ReplyTokens); 0 means rollout.ReplyBudget.
	ReplyTokens int
	// Concurrent is the rollouts the sampler's KV pool holds at once (the
	// KVPlan's cap), for the step time; 0 means all of them.
	Concurrent int
}

// replyTokens is s's reply room between turns.
func (s EnvShape) replyTokens() int {
	if s.ReplyTokens > 0 {
		return s.ReplyTokens
	}
	return rollout.ReplyBudget
}

// AssumedPromptTokens is the prompt length used when no tokenizer is at
// hand to render the environment's prompts.
const AssumedPromptTokens = 256

// Options are the facts Memory cannot read from the config.
type Options struct {
	// Device overrides cfg.Device.
	Device string
	// WeightDType is the checkpoint's weight dtype ("bfloat16", "float32",
	// …); "" reads modelCfg.TorchDType.
	WeightDType string
	// Train and Eval describe the environments; nil derives Train from
	// [[env]] with AssumedPromptTokens and leaves eval out unless
	// [eval] num_examples is a count.
	Train, Eval []EnvShape
	// Assumptions are the caller's notes (how prompt lengths were found),
	// carried into the estimate.
	Assumptions []string
	// Available, when known, bounds the sampler's KV pool (KVPlan: a step
	// whose rollouts do not all fit at once runs them in passes) and is
	// what recompute = "auto" chooses by; nil or unknown leaves the pool
	// unbounded and no recompute.
	Available *Available
	// ExpertParallel splits a mixture-of-experts model's routed experts
	// over that many devices (expertShard); 0 or 1 holds them all.
	ExpertParallel int
}

const f32Bytes = 4

// Memory estimates the memory a run of cfg on a model of shape mc
// holds, item by item, from the sizes the code allocates: the forwards'
// and the backward's as model reports them (model/train_sizes.go,
// model/forward_sizes.go), the KV caches', loss's, lora's and AdamW's.
func Memory(cfg *config.Config, mc *model.Config, o Options) (*Estimate, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dev := o.Device
	if dev == "" {
		dev = cfg.Device
	}
	dtype := o.WeightDType
	if dtype == "" {
		dtype = mc.TorchDType
	}
	// model.Load keeps bf16 tensors as BF16 buffers and converts f16 and
	// f32 ones to F32; the device's backend says how it stores a BF16
	// buffer (the CPU widens it to f32). A name that is not a device is
	// sized as f32, like the CPU.
	desc, _ := kernels.DescribeDevice(dev)
	stored := kernels.F32
	if dtype == "bfloat16" || dtype == "bf16" {
		stored = desc.Storage(kernels.BF16)
	}
	e := &Estimate{Model: cfg.Model, Device: dev, BaseParams: mc.ParamCount(), WeightBytes: stored.Size(),
		Assumptions: append([]string(nil), o.Assumptions...)}
	projs, routers, err := loraTargets(cfg.LoRA, mc)
	if err != nil {
		return nil, err
	}
	ad := shapeOf(mc, cfg.LoRA.Rank, projs, routers)
	if !cfg.LoRA.AdaptsExperts(mc) {
		// "all-linear" on GLM-4.5: its dense layers' MLP is adapted, the
		// fused routed experts are not.
		clear(ad.m.Experts)
	}
	ad.replay = cfg.Loss.RoutingReplay && mc.SparseLayers() > 0
	// The trace's q and KV cache are bf16 where the model's would be
	// (model.Model's traceAttention): bf16 weights on a backend whose KV
	// dtype is bf16.
	ad.attn = mc.TraceAttentionDType(desc, stored)
	if e.TrainableParams, err = cfg.LoRA.ParamCount(mc); err != nil {
		return nil, err
	}

	// Forwards write bf16 casts of their GEMMs' inputs where the backend
	// multiplies bf16 weights in bf16 (model/layer.go allocCasts: the
	// model's castsBF16, bf16 weights on a BF16GEMM backend).
	e.casts = stored == kernels.BF16 && desc.BF16GEMM
	e.ep = newExpertShard(mc, o.ExpertParallel, ad.attn)
	e.ExpertParallel = e.ep.ep
	e.weightItems(mc, stored)
	if stored == kernels.BF16 && desc.BF16GEMM {
		tokens := max(cfg.MicroBatchTokens, 2048, cfg.BatchSize)
		e.add(PhaseResident, "bf16 activation copies for cublasGemmEx", bf16Scratch(mc, tokens),
			fmt.Sprintf("kernels/cuda rounds each GEMM's activations (up to %d tokens) to bf16 in pooled buffers, one per power-of-two size", tokens))
	}
	held, where := e.TrainableParams, ""
	if experts := expertLoRAParams(mc, ad.m); e.ep.split() && experts > 0 {
		held = e.TrainableParams - experts + e.ep.held(experts)
		where = fmt.Sprintf("; the routed experts' %s live with their experts (%d of %d here)", count(experts), e.ep.per, e.ep.total)
	}
	e.add(PhaseResident, "LoRA params + grads", held*2*f32Bytes,
		fmt.Sprintf("%s params × (4 B + 4 B grad), rank %d on %s%s", count(held), cfg.LoRA.Rank, strings.Join(cfg.LoRA.TargetModules, ","), where))
	e.add(PhaseResident, "AdamW moments", held*2*f32Bytes, "exp_avg + exp_avg_sq, f32"+where)

	train := o.Train
	if train == nil {
		train = TrainShapes(cfg)
	}
	eval := o.Eval
	if eval == nil {
		eval = evalShapesFromConfig(cfg)
	}
	longest := 0
	for i, s := range train {
		if s.PromptTokens == 0 {
			train[i].PromptTokens = AssumedPromptTokens
			e.note("env %s: prompt length unknown (no tokenizer to render it); assumed %d tokens", s.Name, AssumedPromptTokens)
		}
	}
	var worst phaseBytes
	var worstPlan KVPlan
	var seqs []trainSeq
	stepTrained := int64(0) // trained tokens of a whole step: the policy update's metrics
	for _, s := range train {
		stepTrained += int64(s.Examples) * int64(s.Rollouts) * int64(s.MaxTokens) * int64(max(1, s.MaxTurns))
		p, plan := e.planSampling(mc, ad, s, dev, PhaseSampling, o.Available)
		longest = max(longest, p.maxLen)
		seq := trainSeq{rows: max(1, p.maxLen-1), trained: s.MaxTokens * max(1, s.MaxTurns)}
		seqs = append(seqs, seq)
		if s.Rollouts > 1 {
			// A group's prompt runs once in the training forward
			// (model.Batch.Share): its other rollouts add only their
			// completions' rows, so a micro-batch of groups scores more
			// rows per token than one of lone sequences.
			comp := max(1, p.maxLen-s.PromptTokens)
			seqs = append(seqs, trainSeq{rows: seq.rows + (s.Rollouts-1)*comp, trained: s.Rollouts * seq.trained, members: s.Rollouts})
		}
		if p.total() > worst.total() {
			worst, worstPlan = p, plan
		}
	}
	worst.emit(e, PhaseSampling)
	e.KV = append(e.KV, worstPlan)
	trainingAt := len(e.Items)
	if cfg.Eval.Interval > 0 {
		var worstEval phaseBytes
		var evalPlan KVPlan
		for _, s := range eval {
			if s.PromptTokens == 0 {
				s.PromptTokens = AssumedPromptTokens
				e.note("eval env %s: prompt length unknown; assumed %d tokens", s.Name, AssumedPromptTokens)
			}
			if p, plan := e.planSampling(mc, ad, s, dev, PhaseEval, o.Available); p.total() > worstEval.total() {
				worstEval, evalPlan = p, plan
			}
		}
		worstEval.emit(e, PhaseEval)
		e.KV = append(e.KV, evalPlan)
	}
	e.note("activations between a layer's ops are %s (the residual stream, the norms' statistics and the logits f32), the training trace's q and KV cache %v; the sampler's paged KV cache is %v on %s; completions are taken at max_tokens (the worst case)",
		betweenOps(mc, ad.attn), ad.attn, kvDType(dev), dev)
	for _, p := range e.KV {
		if p.Bounded {
			e.note("the %s KV pool is cut to the free memory (less %.0f%% headroom): %d of %d rollouts at once, the rest wait for blocks", p.Phase, 100*kvHeadroom, p.Cap, p.Rollouts)
		}
	}
	if desc.GPU && mc.LinearLayers() > 0 && mc.RecurrentMixerName() == "Mamba-2" {
		e.ssdScratchItem(cfg, mc, longest, seqs)
	}
	if err := e.recomputeItems(cfg, mc, projs, ad, longest, seqs, stepTrained, trainingAt, o.Available); err != nil {
		return nil, err
	}
	if dev == "cpu" {
		e.note("cpu: Go's garbage collector reclaims freed buffers lazily, so the process can briefly hold more than the peak (GOGC)")
	}
	e.finish()
	return e, nil
}

func (e *Estimate) add(phase, name string, bytes int64, detail string) {
	e.Items = append(e.Items, MemItem{Phase: phase, Name: name, Bytes: bytes, Detail: detail})
}

func (e *Estimate) note(format string, args ...any) {
	e.Assumptions = append(e.Assumptions, fmt.Sprintf(format, args...))
}

// finish sums resident items and the largest phase into Peak.
func (e *Estimate) finish() {
	phases := map[string]int64{}
	var resident int64
	for _, it := range e.Items {
		if it.Phase == PhaseResident {
			resident += it.Bytes
		} else {
			phases[it.Phase] += it.Bytes
		}
	}
	e.Peak, e.PeakPhase = resident, PhaseResident
	for _, ph := range []string{PhaseSampling, PhaseTraining, PhaseEval} {
		if b, ok := phases[ph]; ok && resident+b > e.Peak {
			e.Peak, e.PeakPhase = resident+b, ph
		}
	}
}

// PhaseBytes is the sum of the items of one phase.
func (e *Estimate) PhaseBytes(phase string) int64 {
	var n int64
	for _, it := range e.Items {
		if it.Phase == phase {
			n += it.Bytes
		}
	}
	return n
}

// TrainShapes describes the [[env]] blocks as the trainer plays them: each
// env's share of batch_size / rollouts_per_example examples (rounded up, as
// the env mixture may give it one more), with prompts not yet measured.
func TrainShapes(cfg *config.Config) []EnvShape {
	perStep := cfg.BatchSize / cfg.RolloutsPerExample
	total := 0.0
	for _, ec := range cfg.Env {
		total += ec.Weight
	}
	var out []EnvShape
	for _, ec := range cfg.Env {
		name := ec.Name
		if name == "" {
			name = ec.ID
		}
		n := perStep
		if total > 0 && len(cfg.Env) > 1 {
			n = min(perStep, int(math.Ceil(float64(perStep)*ec.Weight/total)))
		}
		out = append(out, EnvShape{Name: name, Examples: n, Rollouts: cfg.RolloutsPerExample,
			MaxTurns: 1, MaxTokens: cfg.Sampling.MaxTokens})
	}
	return out
}

// evalShapesFromConfig sizes eval when [eval] gives counts; "all examples"
// (-1) needs the environment's split, which only Run reads.
func evalShapesFromConfig(cfg *config.Config) []EnvShape {
	maxTokens := cfg.Sampling.MaxTokens
	if m := cfg.Eval.Sampling.MaxTokens; m > 0 {
		maxTokens = m
	}
	var out []EnvShape
	if len(cfg.Eval.Env) == 0 {
		for _, s := range TrainShapes(cfg) {
			out = append(out, EnvShape{Name: s.Name, Examples: cfg.Eval.NumExamples,
				Rollouts: cfg.Eval.RolloutsPerExample, MaxTurns: 1, MaxTokens: maxTokens})
		}
	}
	for _, ec := range cfg.Eval.Env {
		s := EnvShape{Name: ec.ID, Examples: cfg.Eval.NumExamples, Rollouts: cfg.Eval.RolloutsPerExample, MaxTurns: 1, MaxTokens: maxTokens}
		if ec.NumExamples != nil {
			s.Examples = *ec.NumExamples
		}
		if ec.RolloutsPerExample != nil {
			s.Rollouts = *ec.RolloutsPerExample
		}
		out = append(out, s)
	}
	var known []EnvShape
	for _, s := range out {
		if s.Examples > 0 {
			known = append(known, s)
		}
	}
	return known
}

// phaseBytes is one phase's items before they are added to an Estimate.
type phaseBytes struct {
	items  []MemItem
	maxLen int
	decode int64 // the decode workspaces (KVPlan.DecodeBytes)
}

func (p phaseBytes) total() int64 {
	var n int64
	for _, it := range p.items {
		n += it.Bytes
	}
	return n
}

func (p phaseBytes) emit(e *Estimate, phase string) {
	for _, it := range p.items {
		it.Phase = phase
		e.Items = append(e.Items, it)
	}
}

// slotTokens says what one KV slot holds: the prompt and, per model turn,
// max_tokens, with a reply budget between turns — or the model's context
// when that is smaller (rollout.CacheLen).
func slotTokens(mc *model.Config, s EnvShape, maxLen int) string {
	turns := max(1, s.MaxTurns)
	what := fmt.Sprintf("prompt %d + max_tokens %d", s.PromptTokens, s.MaxTokens)
	if turns > 1 {
		what = fmt.Sprintf("prompt %d + %d turns × max_tokens %d + %d replies × %d", s.PromptTokens, turns, s.MaxTokens, turns-1, s.replyTokens())
	}
	if maxLen == mc.MaxPositions && s.PromptTokens+s.MaxTokens*turns+s.replyTokens()*(turns-1) > maxLen {
		what += fmt.Sprintf(", capped at the model's context %d", mc.MaxPositions)
	}
	return what
}

// samplingBytes sizes one environment's sampler under plan: its paged KV
// cache (KVPlan.Bytes), and the activations of the largest Forward call
// it makes: with prompts shared, the first prefills one prompt per group
// held at once and the next decodes every held rollout (with the
// followers' last prompt token), while a bounded pool also mixes new
// groups' prefill into running decode steps; at most max(2048, slots)
// tokens (sampler.Config.PrefillTokens). What Forward allocates for a
// call of n tokens and rows logits rows, model reports
// (model.Config.ForwardBytes: the inference set, every layer's LoRA x·Aᵀ,
// a mixture-of-experts model's experts' set, the logits rows); an
// adapter known only by its count of targets (grpo eval's) is taken as
// that many dense projections of every layer, each an x·Aᵀ per layer.
func samplingBytes(mc *model.Config, ad adapterShape, s EnvShape, plan KVPlan, casts bool, ep expertShard) phaseBytes {
	slots, held := int64(plan.Rollouts), int64(max(1, plan.Cap))
	groups := min(int64(max(1, s.Examples)), (held+int64(plan.Group)-1)/int64(plan.Group))
	prompt := int64(max(s.PromptTokens, 1))
	chunk := max(2048, slots)
	// Unbounded, the peak is the larger of the prompts' prefill (a logits
	// row per group) and the first full decode step (a row per rollout);
	// bounded, a step may hold both at once.
	forward := func(n, rows int64) (acts, moe, head int64) {
		f := mc.ForwardBytes(int(n), int(rows), ad.m, casts, ad.attn)
		acts = f.Acts + f.LoRA
		if ad.byCount {
			for _, t := range ad.perLayer {
				acts += n * t * int64(ad.rank) * f32Bytes
			}
		}
		return acts, f.MoE + ep.a2aBytes(n), f.Head
	}
	peak := func(n, rows int64) int64 {
		acts, moe, head := forward(n, rows)
		return acts + moe + head
	}
	n, rows := min(chunk, groups*prompt), groups
	if peak(n, rows) < peak(held, held) {
		n, rows = held, held
	}
	if plan.Bounded {
		n, rows = min(chunk, groups*prompt+held), held
	}
	var p phaseBytes
	p.maxLen = plan.MaxLen
	// The static decode step's workspaces (model.Decoder), which a kept
	// sampler holds between steps: one per padded bucket (1, 2, 4, … and
	// the slots), each as model allocates it. An adapter known only by
	// its count of targets is priced as a forward of all those rows.
	if ad.byCount {
		rowsAll := slots
		for b := int64(1); b < slots; b <<= 1 {
			rowsAll += b
		}
		p.decode = peak(rowsAll, rowsAll)
	} else {
		for b := int64(1); b < slots; b <<= 1 {
			p.decode += mc.DecodeBucketBytes(int(b), ad.m, casts) + ep.decodeA2ABytes(b)
		}
		p.decode += mc.DecodeBucketBytes(int(slots), ad.m, casts) + ep.decodeA2ABytes(slots)
	}
	blocks := fmt.Sprint(plan.Blocks)
	if plan.Pad > 0 {
		blocks = fmt.Sprintf("(%d + %d for the decode step's padding slot)", plan.Blocks, plan.Pad)
	}
	pools := fmt.Sprintf("%s blocks × %d tokens × %d layers", blocks, plan.BlockSize, mc.AttentionLayers())
	if n := mc.SlidingLayers(); n > 0 {
		// The sliding-window layers' own pool (KVPlan.WindowBlocks).
		pools = fmt.Sprintf("(%s blocks × %d full layers + %d blocks × %d sliding-window layers (window %d: %d blocks a rollout)) × %d tokens",
			blocks, mc.AttentionLayers()-n, plan.WindowBlocks, n, mc.LargestWindow(), mc.WindowSeqBlocks(plan.MaxLen, plan.BlockSize), plan.BlockSize)
	}
	p.items = append(p.items, MemItem{Name: "KV cache " + s.Name, Bytes: plan.Bytes(),
		Detail: fmt.Sprintf("%s × %d kv heads × %d head_dim × 2 (K,V) × %d B (%v); %d of %d rollouts of %d tokens (%s) at once",
			pools, mc.NumKVHeads, mc.HeadDim, plan.DType.Size(), plan.DType, plan.Cap, plan.Rollouts, plan.MaxLen, slotTokens(mc, s, plan.MaxLen))})
	if st := mc.LinearStateBytes(); st > 0 {
		p.items = append(p.items, MemItem{Name: "linear-attention states " + s.Name, Bytes: (slots + int64(plan.Pad)) * st,
			Detail: fmt.Sprintf("%d slots × %d %s layers × (conv %d + recurrent %d) × 4 B (f32)", slots+int64(plan.Pad), mc.LinearLayers(), mc.RecurrentMixerName(), mc.ConvStateWidth(), mc.RecurrentStateWidth())})
	}
	acts, moe, head := forward(n, rows)
	p.items = append(p.items, MemItem{Name: "forward activations", Bytes: acts,
		Detail: fmt.Sprintf("forward of %d tokens", n)})
	if a2a := ep.a2aBytes(n); a2a > 0 {
		moe -= a2a
		p.items = append(p.items, MemItem{Name: "all-to-all buffers (expert parallel)", Bytes: a2a, Detail: ep.a2aDetail(n)})
	}
	if moe > 0 {
		p.items = append(p.items, MemItem{Name: "expert activations and grouping (MoE)", Bytes: moe,
			Detail: fmt.Sprintf("%d tokens × %d experts each = %d permuted rows: router logits, top-k, grouping indices, gathered inputs, expert outputs, gate/up", n, mc.NumExpertsPerTok, n*int64(mc.NumExpertsPerTok))})
	}
	// The logits stay on the backend (Backend.Sample returns only tokens and
	// log-probs).
	p.items = append(p.items, MemItem{Name: "logits", Bytes: head,
		Detail: fmt.Sprintf("%d rows × %d vocab", rows, mc.VocabSize)})
	return p
}

// kvHeadroom is the share of the free memory a bounded KV pool leaves
// unused: allocator fragmentation, the driver's and the runtime's own.
const kvHeadroom = 0.05

// planSampling sizes one environment's sampling phase: every rollout at
// once, or, when the free memory is known and smaller than that needs
// beside the resident items, the pool that fits (which may hold none).
func (e *Estimate) planSampling(mc *model.Config, ad adapterShape, s EnvShape, dev, phase string, av *Available) (phaseBytes, KVPlan) {
	plan := newKVPlan(mc, s, dev)
	plan.Phase = phase
	p := samplingBytes(mc, ad, s, plan, e.casts, e.ep)
	plan.DecodeBytes = p.decode
	if av == nil || !av.Known {
		return p, plan
	}
	room := int64(float64(av.Bytes)*(1-kvHeadroom)) - e.PhaseBytes(PhaseResident) - (p.total() - plan.Bytes())
	if room >= plan.Bytes() {
		return p, plan
	}
	// The table, the padding slot's row and block, and the sliding pool
	// (which shrinks only if the full pool falls below it) stay.
	fixed := plan.Bytes() - int64(plan.Blocks)*plan.BlockBytes
	plan.bound(int(max(0, room-fixed) / plan.BlockBytes))
	if plan.Cap == 0 {
		// Not one rollout fits: keep the full pool, so the peak shows by
		// how much the run is short.
		plan.bound(plan.BlocksAll)
		plan.Cap, plan.Passes = 0, 0
		p = samplingBytes(mc, ad, s, plan, e.casts, e.ep)
		plan.DecodeBytes = p.decode
		return p, plan
	}
	p = samplingBytes(mc, ad, s, plan, e.casts, e.ep)
	plan.DecodeBytes = p.decode
	return p, plan
}

// trainSeq is one environment's rollout as the policy update sees it: the
// rows it puts through the forward (its KV cache length less the last
// token) and how many of them carry loss weight at most (max_tokens per
// model turn; environment replies are masked).
// trainSeq is the shape a micro-batch is packed with: rows forward rows of
// which trained carry loss; members > 1 for a GRPO group whose prompt runs
// once (model.Batch.Share).
type trainSeq struct{ rows, trained, members int }

// lossRows is how many of a micro-batch's n rows carry loss weight, and so
// reach the LM head: the micro-batch filled with full sequences of the
// shape that trains most rows per row, and a last, shorter one (cut
// prompt, full completion) taking up the remainder.
func lossRows(n int64, seqs []trainSeq) int64 {
	r := int64(1)
	for _, s := range seqs {
		rows, tr := int64(s.rows), int64(min(s.trained, s.rows))
		r = max(r, min(n, n/rows*tr+min(tr, n%rows)))
	}
	return r
}

// traceTableEntries bounds a trace's block table: one entry per sequence
// of a contiguous cache (sequences of the longest length), or, when groups
// share prompts, one per sequence and position (model.traceCache: blocks
// of one row), for as many sequences as the groups put in n rows.
func traceTableEntries(n int64, longest int, seqs []trainSeq) int64 {
	perSeq := int64(max(1, longest-1))
	entries := (n + perSeq - 1) / perSeq
	for _, s := range seqs {
		if s.members > 1 {
			groups := (n + int64(s.rows) - 1) / int64(s.rows)
			entries = max(entries, groups*int64(s.members)*perSeq)
		}
	}
	return entries
}

// traceRuns is how many linear-attention runs a micro-batch of n rows is
// cut into (model.Batch runs), for as many sequences as the shortest
// shape packs into n rows. A group whose prompt runs once has a run for
// its prompt and one for each member's continuation
// (model/trainshare_linear.go). The model counts them only when it has
// such layers (model.Config.TraceBytes).
func traceRuns(n int64, seqs []trainSeq) int64 {
	var most int64
	for _, s := range seqs {
		k := (n + int64(s.rows) - 1) / int64(s.rows)
		if s.members > 1 {
			k *= int64(s.members) + 1
		}
		most = max(most, k)
	}
	return most
}

// promptGroups is how many groups sharing a prompt a micro-batch of n
// rows holds at most, for as many as a group shape packs into n rows (0
// without groups): with DeltaNet layers the trace keeps each group's conv
// and recurrent state at its prompt's end in every DeltaNet layer (the
// backward their gradients one layer at a time:
// model/trainshare_linear.go).
func promptGroups(n int64, seqs []trainSeq) int64 {
	var groups int64
	for _, s := range seqs {
		if s.members > 1 {
			groups = max(groups, (n+int64(s.rows)-1)/int64(s.rows))
		}
	}
	return groups
}

// trainingBytes sizes one micro-batch of PolicyGradient (the most tokens
// one forward/backward holds) under recompute plan pl. n =
// max(micro_batch_tokens, the longest sequence), as a sample is never
// split; r of its rows carry loss weight (lossRows) and are the only ones
// scored. What model allocates, model sizes (model/train_sizes.go, from
// the lists its allocators allocate from); the estimate puts together
// the batch's geometry and which buffers live at once:
//
//	trace (model/train.go ForwardTrain): its inputs and LM head
//	  (model.Config.TraceBytes: n tokens, r scored rows, the runs of the
//	  shortest shape's sequences, traceRuns), what pl keeps of each layer
//	  (plan.keptBytes: model.Config.TrainingLayerBytes, and the sparse
//	  layers' shared MoEScratchBytes), and its own KV cache: 2kv per
//	  token and layer in the trace's attention dtype, as q (bf16 for
//	  bf16 weights on a GPU: model.Config.TraceAttentionDType; one layer
//	  for all the checkpointed layers; a hybrid's attention layers
//	  only), the block table (traceTableEntries)
//	  and, with groups sharing prompts on a hybrid model, each group's
//	  prompt states in every DeltaNet layer (promptGroups)
//	then either the KL reference (beta > 0): a second trace without LoRA,
//	  every layer checkpointed (it has no backward; one layer's KV cache),
//	  replaying the routing as the policy's does, plus the copy of its
//	  logp (1 f32 per scored row) that outlives it — or, when larger, its
//	  layers while the last one's forward scratch is alive
//	  (plan.forwardPeakBytes); the trace is freed before anything below
//	  is allocated,
//	or the loss buffers (loss/policyloss.go), f32 per scored row: sampler
//	  log-probs, adv, w, dlogp (4), ref (1 with beta > 0), π_old's copy
//	  (1 with a behaviour correction), and each sequence's start (int32,
//	  one per sequence of the micro-batch and one more), all but dlogp and
//	  ref freed before the backward; then dlogp, ref and the backward's
//	  buffers (model.Config.BackwardHeadBytes): the residual gradient for
//	  the whole pass, plus the larger of the LM head's scratch (freed
//	  before the layers) and one layer's (model.Config.BackwardBytes, the
//	  KV cache taken as n rows, with what pl recomputes for it:
//	  plan.recomputedBytes), freed before the next layer; the
//	  load-balancing loss's gradient lives through the layers' backward
//	  with a router adapter and router_aux_loss_coef > 0
//
// so the phase holds trace + max(reference, loss + backward), plus, for
// the whole step, the per-token metrics every micro-batch writes and the
// host reads once at the end (loss/microbatch.go stepStats): logp,
// entropy, loss, clip, correction clip, mismatch (6) and kl (1 with beta >
// 0) per trained token. (What a
// layer's forward recomputes lives only through that layer's forward,
// less than one layer's backward holds.)
//
// The trace's KV cache is slots × longest sequence of the micro-batch;
// with equal-length sequences that is n rows, which is assumed.
func trainingBytes(cfg *config.Config, mc *model.Config, ad adapterShape, longest int, seqs []trainSeq, n, r, stepTrained int64, pl plan, casts bool, ep expertShard) phaseBytes {
	tb := mc.TraceBytes(int(n), int(r), int(traceRuns(n, seqs)), casts, ad.attn)
	bh := mc.BackwardHeadBytes(int(n), int(r), casts, ad.attn)
	setting := pl.setting(mc.NumLayers)
	trace := tb.Inputs + tb.Head + pl.keptBytes(mc, ad, n)
	table := model.KVTableBytes(traceTableEntries(n, longest, seqs))
	// The shared prompts' states are the trace cache's, every DeltaNet
	// layer's (the KL reference's trace holds its own).
	groups := promptGroups(n, seqs)
	states := groups * mc.LinearStateBytes()
	cache := int64(pl.cacheLayers(mc))*n*mc.KVLayerBytes(ad.attn) + table + states
	var out phaseBytes
	add := func(name string, bytes int64, detail string) {
		out.items = append(out.items, MemItem{Phase: PhaseTraining, Name: name, Bytes: bytes, Detail: detail})
	}
	add("activations (trace)", trace,
		fmt.Sprintf("micro-batch of %d tokens, %d of them scored by the LM head; recompute = %s", n, r, setting))
	cacheDetail := fmt.Sprintf("%d tokens × %d layers", n, pl.cacheLayers(mc))
	if pl.layers > 0 {
		cacheDetail += fmt.Sprintf(" (recompute = %s: the checkpointed layers share one, their keys and values rerun)", setting)
	}
	add("training KV cache", cache, cacheDetail)
	// The step's per-token metrics live through every micro-batch.
	metrics := int64(6)
	if cfg.Loss.Beta > 0 {
		metrics++
	}
	add("per-token metrics of the step", metrics*stepTrained*f32Bytes,
		fmt.Sprintf("%d trained tokens; read back once per step", stepTrained))
	if a2a := ep.a2aBytes(n); a2a > 0 {
		// The trace's forward and the backward each exchange one sparse
		// layer's rows at a time (the backward sends the outputs'
		// gradients to the experts and the inputs' gradients back).
		add("all-to-all buffers (expert parallel)", a2a, ep.a2aDetail(n))
	}
	if layers := ep.keptLayers(mc, pl); layers > 0 {
		add("received expert inputs (expert parallel)", int64(layers)*ep.receivedBytes(n), ep.receivedDetail(n, layers))
	}
	// The loss buffers (sampler log-probs, adv, w, dlogp; ref with beta >
	// 0, π_old with a correction; the sequences' starts) are allocated
	// after the KL reference trace is freed, with the backward scratch;
	// the larger of the two sets the peak.
	loss := int64(4)
	if cfg.Loss.Beta > 0 {
		loss++
	}
	if c := cfg.Loss.ISCorrection; c != "" && c != "none" {
		loss++
	}
	starts := int64(1)
	for _, s := range seqs {
		starts = max(starts, (n+int64(s.rows)-1)/int64(s.rows)+1)
	}
	// Backward frees the head's scratch before the layers and each layer's
	// before the next: dx (h) plus the larger of the head (dlogits, dhF)
	// and one layer (with dh1 and what pl recomputes).
	var layer int64 // the largest one layer's scratch
	for l := range mc.NumLayers {
		// The trace's KV cache is taken as one row per token.
		b := mc.BackwardBytes(l, int(n), int(n), int(groups), ad.m, ad.attn) + pl.recomputedBytes(mc, ad, n, l)
		layer = max(layer, b)
	}
	if ad.m.TrainsRouter() && mc.RouterAuxLossCoef > 0 {
		// The load-balancing loss's gradient per router probability,
		// alive while the layers run (model/moe_router.go).
		layer += bh.LoadBalance
	}
	kept := int64(1) // dlogp, and ref with beta > 0, outlive PolicyLoss
	if cfg.Loss.Beta > 0 {
		kept++
	}
	backward := max(r*loss*f32Bytes+starts*4, r*kept*f32Bytes+bh.Residual+max(bh.LMHead, layer))
	ref := int64(0)
	if cfg.Loss.Beta > 0 {
		// The reference trace (loss/microbatch.go referenceLogp) has no
		// backward, so it checkpoints every layer whatever pl is, and has
		// no adapter: at most its layers with one layer's forward scratch
		// (the layers before it kept), or all of it with the logp copy;
		// one layer's KV cache.
		all, none := plan{model.RecomputeNone, mc.NumLayers}, noAdapter(mc)
		// It replays the micro-batch's routing too.
		none.replay, none.attn = ad.replay, ad.attn
		layers := tb.Inputs + all.keptBytes(mc, none, n)
		ref = max(layers+tb.Head+r*f32Bytes, tb.Inputs+all.forwardPeakBytes(mc, none, n)) +
			int64(all.cacheLayers(mc))*n*mc.KVLayerBytes(ad.attn) + table + states
	}
	if ref > backward {
		add("KL reference trace", ref, "beta > 0: the base model's forward, alive beside the policy's")
	} else {
		add("loss + backward scratch", backward, fmt.Sprintf("%d scored rows of %d tokens", r, n))
	}
	return out
}

func dims(mc *model.Config) (h, q, kv, inter, v int64) {
	return int64(mc.HiddenSize), int64(mc.NumHeads * mc.HeadDim), int64(mc.NumKVHeads * mc.HeadDim),
		int64(mc.IntermediateSize), int64(mc.VocabSize)
}

// loraTargets validates the [lora] table and returns its projections and
// whether it adapts the mixture-of-experts routers, on a model of shape mc.
func loraTargets(c lora.Config, mc *model.Config) ([]model.Proj, bool, error) {
	if err := c.Validate(); err != nil {
		return nil, false, err
	}
	return c.Targets(mc)
}

// ssdScratchItem prices the pool blocks the Mamba-2 layers' backward
// (SSDScanBackward: the saved states, the heads' shares of B's and C's
// gradients) takes for a training micro-batch, taken as one call over
// all its tokens and the most runs a micro-batch holds (traceRuns); the
// pool keeps them for the run, so they are resident.
func (e *Estimate) ssdScratchItem(cfg *config.Config, mc *model.Config, longest int, seqs []trainSeq) {
	n := int64(max(cfg.MicroBatchTokens, longest-1))
	runs := traceRuns(n, seqs)
	e.add(PhaseResident, "SSD backward scratch (Mamba-2)",
		int64(cuda.SSDBackwardPoolBytes(int(runs), int(n), mc.MambaNumHeads, mc.MambaHeadDim, mc.SSMStateSize)),
		fmt.Sprintf("kernels/cuda's pooled saved states and B/C gradient shares for a micro-batch of %d tokens in %d runs", n, runs))
}

// bf16Scratch is kernels/cuda's pool of bf16 copies of the activations a
// MatMul with bf16 weights takes as A (cublasGemmEx multiplies bf16 by
// bf16): at most tokens rows of k columns, 2 B each, for every k a GEMM
// sees — each projection's in (forward) and out (backward) width, the hidden
// size for the LM head, the vocabulary for its backward — one buffer per
// size class (cuda.ScratchClass), kept for the run.
func bf16Scratch(mc *model.Config, tokens int) int64 {
	widths := map[int]bool{mc.HiddenSize: true, mc.VocabSize: true}
	if mc.SparseLayers() > 0 {
		// The router's backward multiplies dlogits (tokens × experts) by
		// the bf16 router; the experts' grouped GEMMs read f32 activations.
		widths[mc.NumExperts] = true
	}
	for p := range model.NumProj {
		if mc.HasProjAnywhere(p) {
			in, out := mc.Dims(p)
			widths[in], widths[out] = true, true
		}
	}
	classes := map[int64]bool{}
	for k := range widths {
		classes[int64(cuda.ScratchClass(2*tokens*k))] = true
	}
	var n int64
	for c := range classes {
		n += c
	}
	return n
}

// count writes a parameter count as 596.0M or 1.54B.
func count(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// betweenOps says in which dtype the training trace in attn keeps the
// activations between a layer's ops (model.Config.BF16Layers).
func betweenOps(mc *model.Config, attn kernels.DType) string {
	switch n := mc.BF16Layers(attn); n {
	case 0:
		return "f32"
	case mc.NumLayers:
		return "bf16 in every layer"
	default:
		return fmt.Sprintf("bf16 in %d of the %d layers, f32 in the others", n, mc.NumLayers)
	}
}
