package config

import (
	"github.com/grpo-dev/grpo/curriculum"
	"github.com/grpo-dev/grpo/internal/tomlschema"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/loss"
	"github.com/grpo-dev/grpo/optim"
	"github.com/grpo-dev/grpo/sampler"
)

// Config is a run config: the TOML schema of Prime Intellect Lab's
// configs/rl/*.toml (hosted training), unchanged, plus grpo's own sections.
// Every key and its default is listed in docs/config.md, which a test keeps
// in step with this struct tree and DefaultConfig.
//
// Read one with Load or Parse; build one in Go from DefaultConfig. Validate checks ranges, ValidateEnvs checks env ids and
// args against an environment registry.
type Config struct {
	// Name names the run (Lab: the run name on the dashboard); optional.
	Name string `toml:"name"`
	// Model is a Hugging Face repo id or a local model directory.
	Model string `toml:"model"`
	// MaxSteps is the number of optimizer steps.
	MaxSteps int `toml:"max_steps"`
	// BatchSize is the number of rollouts per step (Lab's meaning): with
	// RolloutsPerExample = 8, batch_size = 256 trains on 32 examples a step.
	BatchSize int `toml:"batch_size"`
	// RolloutsPerExample is the GRPO group size: completions sampled per
	// example, whose rewards are compared with each other.
	RolloutsPerExample int `toml:"rollouts_per_example"`

	Sampling Sampling `toml:"sampling"`
	Env      []Env    `toml:"env"`
	Eval     Eval     `toml:"eval"`
	Wandb    Wandb    `toml:"wandb"`

	// grpo's own keys.

	// Seed seeds dataset shuffling, the env mixture and sampling.
	Seed int64 `toml:"seed"`
	// Device names the backend, one of kernels.Devices(): cpu or cuda.
	Device string `toml:"device"`
	// Devices names the devices a run uses ("cuda:0-7", "cuda:0,2"; see
	// kernels.ParseDevices), overriding Device; empty is one device,
	// Device's first. DeviceList resolves the two.
	Devices []string `toml:"devices"`
	// ExpertParallel forces a run's expert-parallel degree over its
	// devices (1: data parallel); 0 takes estimate's plan, which splits a
	// mixture-of-experts model's experts only when it does not fit each
	// device whole. Checked against the devices here and against the
	// model's experts when the run opens it (trainer/replicas).
	ExpertParallel int `toml:"expert_parallel"`
	// MicroBatchTokens bounds the tokens of one forward/backward pass; a
	// step's rollouts are split into micro-batches of at most this many
	// tokens and their gradients accumulated (the update is the same as
	// one big batch's).
	MicroBatchTokens int `toml:"micro_batch_tokens"`
	// Recompute is the activation-memory policy of the policy update:
	// RecomputeAuto (the estimate picks the least recompute that fits the
	// free memory) or a model.ParseRecomputeSetting setting ("layer",
	// "layer:12", "selective+layer:9").
	Recompute string `toml:"recompute"`
	// MaxErrorSteps stops the run after this many consecutive steps in
	// which every rollout failed (a broken rubric or environment trains on
	// nothing); 0 never stops.
	MaxErrorSteps int          `toml:"max_error_steps"`
	LoRA          lora.Config  `toml:"lora"`
	Loss          loss.Config  `toml:"loss"`
	Optimizer     optim.Config `toml:"optimizer"`
	Checkpoint    Checkpoint   `toml:"checkpoint"`
	Inference     Inference    `toml:"inference"`
	// Buffer is the difficulty pools and online difficulty filtering (Lab's
	// and prime-rl's [buffer]).
	Buffer curriculum.Config `toml:"buffer"`

	// LabKeys holds the Lab keys that are aliases of the settings above or
	// that only mean something on Prime's hosted service.
	LabKeys

	// Warnings lists, once each, the keys that were accepted but are
	// ignored locally, with the reason. The parser does not print them.
	Warnings []string `toml:"-"`

	// src locates keys in the file the config was parsed from (nil for a
	// config built in Go), so later checks can point at a line.
	src *tomlschema.Source
	// text is the file with its overrides written in (Text).
	text []byte
}

// Sampling is the [sampling] section: how rollouts are generated.
// Its sampling knobs are sampler.Params (max_tokens, temperature, top_p,
// top_k, min_p, stop), so the config, the sampler and the Sample op share
// one type and one validator; the rest are the chat template's and Lab's.
type Sampling struct {
	// Params' MaxTokens caps each completion (each assistant turn in
	// multi-turn environments; DefaultMaxTokens when left out); Stop
	// strings end a completion early (the stop string is kept).
	sampler.Params
	// EnableThinking is passed to the chat template (Qwen3's
	// enable_thinking); nil leaves the template's default.
	EnableThinking *bool `toml:"enable_thinking"`
	// Seed seeds sampling; nil derives it from the top-level seed.
	Seed *int64 `toml:"seed"`

	// Lab keys with no local effect (see Config.Warnings).
	ReasoningEffort string         `toml:"reasoning_effort"`
	TempScheduler   map[string]any `toml:"temp_scheduler"`
	ExtraBody       map[string]any `toml:"extra_body"`
}

// Env is one [[env]] block: an environment and its share of the
// training mixture.
type Env struct {
	// ID is a registry id: a builtin ("gsm8k") or a Lab id
	// ("primeintellect/gsm8k"); "id@version" pins a Hub version.
	ID string `toml:"id"`
	// Args are passed to the environment's constructor.
	Args map[string]any `toml:"args"`
	// Weight is the env's share of each batch, relative to the other envs.
	Weight float64 `toml:"weight"`
	// Name labels the env's metrics; defaults to ID.
	Name string `toml:"name"`

	// Version selects the environment's behaviour (a builtin's "v1",
	// "v0"); "id@version" in ID sets it too.
	Version string `toml:"version"`

	// Lab keys with no local effect.
	MaxRetries int `toml:"max_retries"`
}

// Ref is the environment as the registry takes it: "id@version" when a
// version is selected, else the id.
func (e Env) Ref() string { return envRef(e.ID, e.Version) }

func envRef(id, version string) string {
	if version == "" {
		return id
	}
	return id + "@" + version
}

// Eval is the [eval] section: periodic evaluation during training.
type Eval struct {
	// Interval evaluates every Interval steps; 0 turns periodic eval off.
	Interval int `toml:"interval"`
	// NumExamples is the number of eval examples per env; -1 means all.
	NumExamples int `toml:"num_examples"`
	// RolloutsPerExample is the number of completions per eval example.
	RolloutsPerExample int `toml:"rollouts_per_example"`
	// SkipFirstStep skips evaluating the base model before step 1.
	SkipFirstStep bool `toml:"skip_first_step"`
	// Env lists the eval environments; empty means the training envs'
	// eval splits.
	Env []EvalEnv `toml:"env"`
	// Sampling overrides [sampling] for eval; zero values inherit.
	Sampling EvalSampling `toml:"sampling"`

	// Aliases: n_samples (grpo's issue text) for num_examples and the
	// deprecated eval_base_model (= !skip_first_step).
	NSamples      *int  `toml:"n_samples"`
	EvalBaseModel *bool `toml:"eval_base_model"`
}

// EvalEnv is one [[eval.env]] block; unset counts inherit [eval]'s.
type EvalEnv struct {
	ID                 string         `toml:"id"`
	Args               map[string]any `toml:"args"`
	Name               string         `toml:"name"`
	NumExamples        *int           `toml:"num_examples"`
	RolloutsPerExample *int           `toml:"rollouts_per_example"`

	Version    string `toml:"version"`
	MaxRetries int    `toml:"max_retries"`
}

// Ref is the environment as the registry takes it; see Env.Ref.
func (e EvalEnv) Ref() string { return envRef(e.ID, e.Version) }

// EvalSampling is [eval.sampling]: overrides laid over [sampling]'s
// sampler.Params, unset unless given; the result is checked by
// sampler.Params' Validate. Its keys are Lab's, fewer than a
// sampler.Overrides has, and max_tokens 0 inherits, so it keeps a type of
// its own and converts (Overrides).
type EvalSampling struct {
	MaxTokens       int            `toml:"max_tokens"`
	Temperature     *float64       `toml:"temperature"`
	EnableThinking  *bool          `toml:"enable_thinking"`
	ReasoningEffort string         `toml:"reasoning_effort"`
	ExtraBody       map[string]any `toml:"extra_body"`
}

// Overrides are the sampling keys given, to lay over the run's [sampling]
// params.
func (e EvalSampling) Overrides() sampler.Overrides {
	o := sampler.Overrides{Temperature: e.Temperature}
	if e.MaxTokens > 0 {
		o.MaxTokens = &e.MaxTokens
	}
	return o
}

// Wandb is the [wandb] section.
type Wandb struct {
	Project string `toml:"project"`
	Name    string `toml:"name"`
	Entity  string `toml:"entity"`
	// Group and Tags are prime-rl's [wandb] keys of the same names
	// (W&B's run group and tags).
	Group string   `toml:"group"`
	Tags  []string `toml:"tags"`
	// Offline writes the W&B run to the run directory only (for
	// `wandb sync` later), as WANDB_MODE=offline does.
	Offline bool `toml:"offline"`
	// Enabled defaults to true when Project is set (Lab logs to W&B
	// whenever [wandb] names a project).
	Enabled *bool `toml:"enabled"`
}

// On reports whether W&B logging is on.
func (w Wandb) On() bool {
	if w.Enabled != nil {
		return *w.Enabled
	}
	return w.Project != ""
}

// Checkpoint is the [checkpoint] section (grpo's; Lab's [checkpoints]
// interval maps onto it).
type Checkpoint struct {
	// Interval saves a checkpoint every Interval steps (and always after
	// the last step); 0 saves only after the last step.
	Interval int `toml:"interval"`
	// KeepLast keeps the newest KeepLast checkpoints; 0 keeps all.
	KeepLast int `toml:"keep_last"`
	// Dir is where checkpoints go, relative to the run directory.
	Dir string `toml:"dir"`
}

// LabKeys are Lab keys that alias a grpo setting (the parser applies
// them; giving both with different values is an error) or that configure
// Prime's hosted service and are accepted and ignored locally, with a
// warning. Their values are kept so a Go program can inspect them.
type LabKeys struct {
	// Aliases.
	LearningRate *float64       `toml:"learning_rate"` // = [optimizer] lr
	LoRAAlpha    *float64       `toml:"lora_alpha"`    // = [lora] alpha
	Checkpoints  LabCheckpoints `toml:"checkpoints"`   // interval = [checkpoint] interval
	// LossMode is Lab's top-level loss = "rl" | "sft" | "opd" (a string,
	// whereas [loss] is grpo's table); only "rl" runs here.
	LossMode string `toml:"-"`

	// Hosted-only keys.
	MaxAsyncLevel       *int             `toml:"max_async_level"`
	OversamplingFactor  *float64         `toml:"oversampling_factor"`
	MaxInflightRollouts *int             `toml:"max_inflight_rollouts"`
	MaxOffPolicySteps   *int             `toml:"max_off_policy_steps"`
	TrajectoryStrategy  string           `toml:"trajectory_strategy"`
	TrajectoryStrategyC string           `toml:"trajectoryStrategy"` // Lab's camel-case spelling
	EnvFile             any              `toml:"env_file"`
	EnvFiles            []string         `toml:"env_files"`
	CheckpointID        string           `toml:"checkpoint_id"`
	ClusterName         string           `toml:"cluster_name"`
	Val                 map[string]any   `toml:"val"`
	PreBatchFilters     []map[string]any `toml:"pre_batch_filters"`
	PostBatchFilters    []map[string]any `toml:"post_batch_filters"`
	Adapters            map[string]any   `toml:"adapters"`
	Infrastructure      map[string]any   `toml:"infrastructure"`
	Tailscale           map[string]any   `toml:"tailscale"`
	RunConfig           map[string]any   `toml:"run_config"`
}

// LabCheckpoints is Lab's [checkpoints] section.
type LabCheckpoints struct {
	Interval  *int `toml:"interval"`
	KeepCloud *int `toml:"keep_cloud"`
}

// DefaultMaxTokens is [sampling] max_tokens when a config leaves it out.
// Lab (prime-rl's orchestrator, verifiers) leaves max_tokens unset by
// default: no per-turn cap, only the sequence length. grpo sizes every KV
// cache slot and the dr_grpo loss by it, so it needs a number; 1024 tokens
// per assistant turn holds the Lab examples' answers (their configs set
// 128 to 1024) on one local GPU.
const DefaultMaxTokens = 1024

// DefaultConfig is the config a file starts from: every key it leaves out
// keeps the value here. Model has no default and [[env]] needs at least
// one block; [sampling] may be left out whole. Lab's defaults (prime-cli's
// RLConfig: max_steps 100, batch_size 128, rollouts_per_example 8) are
// kept so a Lab config behaves the same here.
func DefaultConfig() Config {
	return Config{
		MaxSteps:           100,
		BatchSize:          128,
		RolloutsPerExample: 8,
		Sampling:           Sampling{Params: defaultSampling()},
		Eval: Eval{
			NumExamples:        -1,
			RolloutsPerExample: 1,
		},
		Device:           "cpu",
		MicroBatchTokens: 8192,
		Recompute:        RecomputeAuto,
		MaxErrorSteps:    3,
		LoRA:             lora.DefaultConfig(),
		Loss:             loss.DefaultConfig(),
		Optimizer:        optim.DefaultConfig(),
		Checkpoint:       Checkpoint{Interval: 50, KeepLast: 3, Dir: "checkpoints"},
		Inference:        DefaultInference(),
	}
}

// defaultSampling is sampler.DefaultParams with DefaultMaxTokens: the
// sampler takes 0 as "no cap", which a run cannot size.
func defaultSampling() sampler.Params {
	p := sampler.DefaultParams()
	p.MaxTokens = DefaultMaxTokens
	return p
}
