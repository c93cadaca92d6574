package estimate

import (
	"encoding/json"
	"io"
)

// estimateJSON is an Estimate as grpo estimate --json prints it: the
// schema scripts read, kept apart from Estimate's Go fields so that
// renaming a field does not change the output.
type estimateJSON struct {
	Model           string       `json:"model"`
	Device          string       `json:"device"`
	BaseParams      int64        `json:"base_params"`
	TrainableParams int64        `json:"trainable_params"`
	Items           []MemItem    `json:"items"`
	PeakBytes       int64        `json:"peak_bytes"`
	PeakPhase       string       `json:"peak_phase"`
	AvailableBytes  *int64       `json:"available_bytes"`
	AvailableSource string       `json:"available_source,omitempty"`
	Fits            *bool        `json:"fits"`
	Verdict         string       `json:"verdict"`
	Time            *timeJSON    `json:"time,omitempty"`
	KVPlans         []kvPlanJSON `json:"kv_plans"`
	Assumptions     []string     `json:"assumptions"`
	// Recompute is the chosen policy; Recomputes every policy's cost, with
	// TrainFLOPs the micro-batch's arithmetic without recompute.
	Recompute       string          `json:"recompute"`
	RecomputeReason string          `json:"recompute_reason"`
	Recomputes      []RecomputeCost `json:"recompute_policies"`
	TrainFLOPs      float64         `json:"train_flops_per_micro_batch"`
}

// kvPlanJSON is a KVPlan: the sampler's KV pool for a phase and
// the concurrency cap it gives.
type kvPlanJSON struct {
	Phase        string `json:"phase"`
	Env          string `json:"env"`
	Rollouts     int    `json:"rollouts"`
	Group        int    `json:"group"`
	MaxLen       int    `json:"max_len"`
	PromptTokens int    `json:"prompt_tokens"`
	BlockSize    int    `json:"block_size"`
	DType        string `json:"dtype"`
	Blocks       int    `json:"blocks"`
	BlocksAll    int    `json:"blocks_all"`
	// WindowBlocks is the sliding-window layers' pool (KVPlan), absent
	// for a model without them.
	WindowBlocks int   `json:"window_blocks,omitempty"`
	Bytes        int64 `json:"bytes"`
	Cap          int   `json:"cap"`
	Passes       int   `json:"passes"`
	Bounded      bool  `json:"bounded"`
}

type timeJSON struct {
	StepSeconds     float64  `json:"step_s"`
	GenerateSeconds float64  `json:"generate_s"`
	TrainSeconds    float64  `json:"train_s"`
	TotalSeconds    float64  `json:"total_s"`
	Steps           int      `json:"steps"`
	WarmupSeconds   float64  `json:"warmup_s"`
	Assumptions     []string `json:"assumptions"`
}

// WriteJSON writes e to w as indented JSON (grpo estimate --json).
func (e *Estimate) WriteJSON(w io.Writer) error {
	out := estimateJSON{Model: e.Model, Device: e.Device, BaseParams: e.BaseParams, TrainableParams: e.TrainableParams,
		Items: e.Items, PeakBytes: e.Peak, PeakPhase: e.PeakPhase, Verdict: e.Verdict(), Assumptions: e.Assumptions,
		Recompute: e.RecomputeSetting, RecomputeReason: e.RecomputeWhy, Recomputes: e.Recomputes, TrainFLOPs: e.TrainFLOPs}
	if e.Available != nil {
		out.AvailableSource = e.Available.Source
		if e.Available.Known {
			out.AvailableBytes = &e.Available.Bytes
		}
	}
	if fits, ok := e.Fits(); ok {
		out.Fits = &fits
	}
	for _, p := range e.KV {
		out.KVPlans = append(out.KVPlans, kvPlanJSON{Phase: p.Phase, Env: p.Env, Rollouts: p.Rollouts, Group: p.Group, MaxLen: p.MaxLen,
			PromptTokens: p.PromptTokens, BlockSize: p.BlockSize, DType: p.DType.String(), Blocks: p.Blocks, BlocksAll: p.BlocksAll,
			WindowBlocks: p.WindowBlocks, Bytes: p.Bytes(), Cap: p.Cap, Passes: p.Passes, Bounded: p.Bounded})
	}
	if t := e.Time; t != nil {
		out.Time = &timeJSON{StepSeconds: t.Step.Seconds(), GenerateSeconds: t.Generate.Seconds(), TrainSeconds: t.Train.Seconds(),
			TotalSeconds: t.Total.Seconds(), Steps: t.Steps, WarmupSeconds: t.Warmup.Seconds(), Assumptions: t.Assumptions}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
