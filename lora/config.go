package lora

import (
	"fmt"
	"math"
	"strings"

	"github.com/grpo-dev/grpo/model"
)

// Config is the [lora] table of a training config and the hyperparameters
// an adapter was built with.
type Config struct {
	// Rank is r, the inner dimension of B·A.
	Rank int `toml:"rank"`
	// Alpha scales the update: scale = Alpha/Rank, or Alpha/√Rank with
	// UseRSLoRA.
	Alpha float64 `toml:"alpha"`
	// TargetModules names the projections to adapt, in every layer: any of
	// q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj; in a
	// mixture-of-experts model the MLP names adapt every expert, and
	// "gate" the routers (mlp.gate), which are frozen otherwise.
	TargetModules []string `toml:"target_modules"`
	// UseRSLoRA selects rank-stabilised scaling (Kalajievski 2023).
	UseRSLoRA bool `toml:"use_rslora"`
	// Dropout on the adapter input during training. Only 0 is supported
	// for training; a loaded adapter keeps the value its file records
	// (dropout does not act at inference).
	Dropout float64 `toml:"dropout"`
}

// AllModules lists every projection grpo can adapt, in layer order.
var AllModules = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// DefaultConfig is the configuration used when [lora] leaves a key out.
// The values are Prime Intellect's prime-rl trainer defaults (LoRAConfig:
// rank 16, alpha 32, dropout 0, every attention and MLP projection), which
// Lab configs inherit. (PEFT's own LoraConfig defaults, r=8, lora_alpha=8,
// target_modules=None, need a per-architecture module list and are not a
// sensible RL default.)
func DefaultConfig() Config {
	return Config{Rank: 16, Alpha: 32, TargetModules: append([]string(nil), AllModules...)}
}

// Validate checks the config for training, naming the offending key.
func (c Config) Validate() error {
	if c.Rank < 1 {
		return fmt.Errorf("lora.rank = %d: the rank must be at least 1 (typical: 8, 16, 32, 64)", c.Rank)
	}
	if !(c.Alpha > 0) || math.IsInf(c.Alpha, 0) {
		return fmt.Errorf("lora.alpha = %v: alpha must be a positive number (typical: 2 × rank)", c.Alpha)
	}
	if _, err := c.projs(); err != nil {
		return err
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) {
		return fmt.Errorf("lora.dropout = %v: dropout must be in [0, 1)", c.Dropout)
	}
	if c.Dropout > 0 {
		return fmt.Errorf("lora.dropout = %v: dropout > 0 is not supported yet; set lora.dropout = 0", c.Dropout)
	}
	return nil
}

// projs maps TargetModules to projections, rejecting unknown and repeated
// names.
func (c Config) projs() ([]model.Proj, error) {
	if len(c.TargetModules) == 0 {
		return nil, fmt.Errorf("lora.target_modules is empty; list at least one of %s", strings.Join(AllModules, ", "))
	}
	var seen [model.NumProj]bool
	out := make([]model.Proj, 0, len(c.TargetModules))
	router := 0
	for _, name := range c.TargetModules {
		if name == model.RouterModule {
			if router++; router > 1 {
				return nil, fmt.Errorf("lora.target_modules lists %q twice", name)
			}
			continue
		}
		p, err := model.ParseProj(name)
		if err != nil {
			return nil, fmt.Errorf("lora.target_modules: %v", err)
		}
		if seen[p] {
			return nil, fmt.Errorf("lora.target_modules lists %q twice", name)
		}
		// A name names every module it ends (PEFT matches suffixes):
		// gate_proj is the MLP's and a shared expert's.
		for _, q := range model.ProjsNamed(name) {
			seen[q] = true
			out = append(out, q)
		}
	}
	return out, nil
}

// routers reports whether TargetModules names the mixture-of-experts
// routers ("gate").
func (c Config) routers() bool {
	for _, name := range c.TargetModules {
		if name == model.RouterModule {
			return true
		}
	}
	return false
}

// Scale is the factor on B·A: alpha/r, or alpha/√r with rsLoRA, as PEFT
// computes it.
func (c Config) Scale() float32 { return scaleOf(c.Alpha, c.Rank, c.UseRSLoRA) }

func scaleOf(alpha float64, rank int, rs bool) float32 {
	if rs {
		return float32(alpha / math.Sqrt(float64(rank)))
	}
	return float32(alpha / float64(rank))
}
