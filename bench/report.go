package bench

import (
	"runtime"

	"github.com/grpo-dev/grpo/estimate/perf"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// JSON is the object `grpo bench --json` prints for r, which
// scripts/bench.sh and scripts/gpu-check.sh read by key: the model (what
// the caller calls it), its backend, parameters and threads; then the
// weights' dtype, the figures ("results") and, where the backend counts,
// the counts — or, for a GRPO-step run, the best step's seconds and work
// as scripts/grpo_step_torch.py reports its own (engine "grpo"), with the
// BLAS on cpu; and with o.Profile the kernel profiles ("profile").
func (r *Results) JSON(m *model.Model, what string, o Options) map[string]any {
	be := m.Backend
	out := map[string]any{"model": what, "backend": be.Name(), "params": m.Config.ParamCount(), "threads": runtime.GOMAXPROCS(0)}
	if o.Profile {
		out["profile"] = r.Profiles
	}
	if s := r.Step; s != nil {
		for k, v := range map[string]any{"engine": "grpo", "prompts": o.Step.Prompts, "rollouts": o.Step.Rollouts,
			"prompt_len": o.Step.PromptLen, "new_tokens": o.Step.NewTokens, "lora_rank": o.LoRARank,
			"gen_tokens": s.GenTokens, "train_tokens": s.TrainTokens, "repeats": o.Repeat,
			"generate_s": s.Generate.Seconds(), "train_s": s.Train.Seconds(), "step_s": s.Step.Seconds(),
			"loss": s.Loss, "grad_norm": s.GradNorm} {
			out[k] = v
		}
		if be.Name() == "cpu" {
			out["blas"] = cpu.OpenBLASInfo().String()
		}
		return out
	}
	out["weights"], out["results"] = WeightDType(m).String(), r.Figures
	if perf.Counter(be) != nil {
		out["counts"] = r.Counts
	}
	return out
}
