package config

import "github.com/grpo-dev/grpo/chat"

// keyInfo documents one key of the schema for docs/config.md and for the
// parser's warnings. A test checks that every key of the Config tree has
// an entry and every entry a key.
type keyInfo struct {
	doc string
	// def overrides the default shown in the docs when DefaultConfig's
	// value does not say it (required keys, per-block defaults).
	def string
	// ignored, when set, makes the key accepted-and-ignored locally; it
	// completes "accepted and ignored locally: KEY because ...".
	ignored string
	// deprecated is `prime lab doctor`'s warning for the key, which the
	// parser's warning repeats (prime-cli's DEPRECATED_CONFIG_FIELDS,
	// prime_cli/lab_setup.py at prime 66fb4b7).
	deprecated string
}

const hostedOnly = "it configures Prime's hosted service"

var keyInfos = map[string]keyInfo{
	"name":                 {doc: "Run name (Lab: shown on the dashboard). The run directory itself comes from the CLI."},
	"model":                {doc: "Base model: a Hugging Face repo id (`Qwen/Qwen3-0.6B`) or a local model directory.", def: "required"},
	"max_steps":            {doc: "Number of optimizer steps."},
	"batch_size":           {doc: "Rollouts per step (Lab's meaning): `batch_size / rollouts_per_example` examples are drawn each step. Must be a multiple of `rollouts_per_example`."},
	"rollouts_per_example": {doc: "GRPO group size: completions sampled per example, whose rewards are compared with each other. At least 2."},
	"seed":                 {doc: "Seeds dataset shuffling, the env mixture and (unless `[sampling] seed` is set) sampling."},
	"device":               {doc: "`\"cpu\"` or `\"cuda\"`."},
	"max_error_steps":      {doc: "Stop the run after this many consecutive steps in which every rollout failed (the step lines show the first error); 0 never stops."},
	"micro_batch_tokens":   {doc: "Tokens per forward/backward pass. A step's rollouts are split into micro-batches of at most this many tokens and their gradients accumulated; the update equals that of one big batch. Lower it if the GPU runs out of memory."},
	"recompute":            {doc: "Activation memory of the forward/backward: `\"none\"` keeps every activation; `\"swiglu\"` recomputes the MLP's SwiGLU in the backward; `\"selective\"` also recomputes attention; `\"layer\"` keeps only each layer's input and reruns the layer in the backward (about one more forward pass per micro-batch, for the least memory); `\"layer:K\"` does so for the last K layers only, the others keeping every activation (`\"selective+layer:K\"`, `\"swiglu+layer:K\"`: the others under that policy). Gradients are the same under every policy. `\"auto\"` picks the policy with the least extra arithmetic whose estimated peak fits 95% of the device's free memory (`grpo estimate` shows each policy's memory and extra FLOPs)."},

	"sampling":                  {doc: "How rollouts are generated. Optional: a config without `[sampling]` samples with these defaults."},
	"sampling.max_tokens":       {doc: "Longest completion, in tokens: a cap on each assistant turn, so a multi-turn episode gets it every turn and its KV slot is sized for max_turns × (max_tokens + a 256-token env reply), up to the model's context. An episode that outgrows that ends truncated, counted in the `truncated/context` metric (a last turn cut by the cap: `truncated/max_tokens`). Lab leaves it unset (no cap but the sequence length); grpo sizes memory by it, hence a default."},
	"sampling.temperature":      {doc: "Softmax temperature; 0 is greedy (no exploration, so no GRPO signal)."},
	"sampling.top_p":            {doc: "Nucleus sampling mass in (0, 1]; 1 disables it."},
	"sampling.top_k":            {doc: "Keep the k most likely tokens; 0 or -1 disables it."},
	"sampling.min_p":            {doc: "Drop tokens whose probability is below min_p × the top token's; 0 disables it."},
	"sampling.stop":             {doc: "Strings that end a completion early."},
	"sampling.enable_thinking":  {doc: "Passed to the chat template as `enable_thinking` (Qwen3/Qwen3.5 thinking mode); unset leaves the template's default: thinking for Qwen3 and Qwen3.5-4B and larger, none for Qwen3.5-0.8B and -2B."},
	"sampling.seed":             {doc: "Sampling seed; unset derives it from the top-level `seed`."},
	"sampling.reasoning_effort": {doc: "Lab: GPT-OSS reasoning effort.", ignored: chat.ReasoningEffortIgnored},
	"sampling.temp_scheduler":   {doc: "Lab: temperature schedule over the run.", ignored: "grpo samples at the fixed [sampling] temperature"},
	"sampling.extra_body":       {doc: "Lab: extra fields for the inference server's HTTP request.", ignored: "grpo sends no extra request fields, in-process or with [inference]"},

	"env":               {doc: "One `[[env]]` block per environment (double brackets: an array of tables). At least one."},
	"env.*.id":          {doc: "Environment id: a builtin (`reverse-text`, `alphabet-sort`, `gsm8k`, `wordle`) or its Lab id (`primeintellect/gsm8k`); `id@version` selects a version (see `env.*.version`).", def: "required"},
	"env.*.args":        {doc: "Arguments of the environment (checked by the env registry: unknown or ill-typed args are errors)."},
	"env.*.weight":      {doc: "Relative share of each batch; weights must be ≥ 0 and sum to more than 0.", def: "1"},
	"env.*.name":        {doc: "Label of the env's metrics; must be unique.", def: "the id"},
	"env.*.version":     {doc: "Which behaviour of the environment: for builtins `v1` (the default: verifiers a60a606's taskset, today's Hub) or `v0` (verifiers 8d4b33247, grpo's earlier builtins), or a Hub version string of either; `id@version` is the same. An installed environment runs as installed: pin its version with `grpo env install owner/name@version` instead."},
	"env.*.max_retries": {doc: "Lab: retries of a failing env server.", ignored: "environments run in-process, with no env server to retry"},

	"eval":                            {doc: "Evaluation during training."},
	"eval.interval":                   {doc: "Evaluate every `interval` steps; 0 turns periodic evaluation off."},
	"eval.num_examples":               {doc: "Examples per eval env; -1 means the whole eval split."},
	"eval.n_samples":                  {doc: "Alias of `num_examples` (an error if both are given and differ).", def: "unset"},
	"eval.rollouts_per_example":       {doc: "Completions per eval example."},
	"eval.skip_first_step":            {doc: "Skip evaluating the base model before the first step."},
	"eval.eval_base_model":            {doc: "Lab's deprecated opposite of `skip_first_step` (`eval_base_model = false` ≡ `skip_first_step = true`); an error if both are given and disagree.", def: "unset"},
	"eval.env":                        {doc: "`[[eval.env]]` blocks: eval environments. None means the training envs' eval splits."},
	"eval.env.*.id":                   {doc: "Environment id, as in `[[env]]`.", def: "required"},
	"eval.env.*.args":                 {doc: "Environment arguments, as in `[[env]]`."},
	"eval.env.*.name":                 {doc: "Label of the env's eval metrics.", def: "the id"},
	"eval.env.*.num_examples":         {doc: "Overrides `[eval] num_examples` for this env.", def: "[eval]'s"},
	"eval.env.*.rollouts_per_example": {doc: "Overrides `[eval] rollouts_per_example` for this env.", def: "[eval]'s"},
	"eval.env.*.version":              {doc: "Which behaviour of the environment, as `env.*.version`."},
	"eval.env.*.max_retries":          {doc: "Lab: env server retries.", ignored: "environments run in-process"},
	"eval.sampling":                   {doc: "Overrides of `[sampling]` for evaluation; unset keys inherit."},
	"eval.sampling.max_tokens":        {doc: "Longest eval completion; 0 inherits `[sampling] max_tokens`."},
	"eval.sampling.temperature":       {doc: "Eval temperature; unset inherits `[sampling] temperature`."},
	"eval.sampling.enable_thinking":   {doc: "Eval `enable_thinking`; unset inherits."},
	"eval.sampling.reasoning_effort":  {doc: "Lab: GPT-OSS reasoning effort.", ignored: chat.ReasoningEffortIgnored},
	"eval.sampling.extra_body":        {doc: "Lab: extra inference-server request fields.", ignored: "grpo has no inference server"},

	"wandb":         {doc: "Weights & Biases logging."},
	"wandb.project": {doc: "W&B project."},
	"wandb.name":    {doc: "W&B run name; empty uses the run's name."},
	"wandb.entity":  {doc: "W&B team or user; empty uses the API key's default entity."},
	"wandb.group":   {doc: "W&B run group (prime-rl's key)."},
	"wandb.tags":    {doc: "W&B run tags (prime-rl's key)."},
	"wandb.offline": {doc: "Keep the W&B run in the run directory's `wandb/` only, for `wandb sync` later (as `WANDB_MODE=offline`). Without an API key or a reachable host the run is kept there too, and a line says so."},
	"wandb.enabled": {doc: "Turns W&B logging on or off (grpo's key; Lab logs whenever a project is set).", def: "true if project is set"},

	"lora":                {doc: "The LoRA adapter that is trained (package lora; PEFT conventions)."},
	"lora.rank":           {doc: "Rank r of B·A."},
	"lora.alpha":          {doc: "Scale numerator: the update is scaled by alpha/r (alpha/√r with use_rslora)."},
	"lora.target_modules": {doc: "Projections adapted, in every layer that has them: `q_proj`, `k_proj`, `v_proj`, `o_proj`, `gate_proj`, `up_proj`, `down_proj`; on Qwen3.5 also the gated DeltaNet's `in_proj_qkv`, `in_proj_z`, `in_proj_b`, `in_proj_a`, `out_proj`, and on Qwen3.5-MoE the shared expert's `shared_expert_gate` (`gate_proj`, `up_proj`, `down_proj` name the shared expert's too). In a mixture-of-experts model `gate_proj`, `up_proj` and `down_proj` adapt every expert, and `gate` adapts the routers (Qwen3-MoE only), which are frozen otherwise (their training adds the model's `router_aux_loss_coef` × load-balancing loss). `[\"all-linear\"]` alone is PEFT's all-linear: what it adapts on each architecture, and how Qwen3.5-MoE's experts are saved for vLLM, is in docs/lora.md."},
	"lora.use_rslora":     {doc: "Rank-stabilised scaling alpha/√r."},
	"lora.dropout":        {doc: "Adapter-input dropout; only 0 is supported for training."},

	"loss":                                {doc: "The GRPO policy loss (grpo's table; Lab's top-level `loss = \"rl\"` string is also accepted, see the aliases above)."},
	"loss.loss_type":                      {doc: "Objective and aggregation, TRL's `loss_type` values: `dapo` (PPO clip, token mean over the batch), `grpo` (PPO clip, per-sequence mean, then mean) or `dr_grpo` (PPO clip, sum / (batch × max_tokens)); `cispo` (CISPO, TRL's and MiniMax-M1's: −sg(min(ratio, epsilon_high))·A·log π, token mean); `dppo` (prime-rl's default loss, `[trainer.loss] type = \"default\"` there: the policy term A·adv_tau·ratio against the sampler's log-probs, dropped for a token whose probability rose by more than `dppo_mask_high` with A > 0 or fell by more than `dppo_mask_low` otherwise, plus kl_tau·(log π − log π_sampler)²; token mean). `clip_ratio/*` report clipped tokens (CISPO: capped weights; DPPO: masked tokens, prime-rl's `is_masked_high/low`)."},
	"loss.epsilon":                        {doc: "PPO ratio clip: the ratio is clipped to [1−epsilon, 1+epsilon_high] (TRL's `epsilon`; the GSPO paper uses 3e-4 with importance_sampling_level = \"sequence\")."},
	"loss.epsilon_high":                   {doc: "Upper clip (DAPO's clip-higher; TRL's `epsilon_high`); unset means epsilon. With loss_type = \"cispo\" it is the cap on the importance weight itself (TRL and ScaleRL's ε_max, recommended 5.0) and must be set ≥ 1."},
	"loss.importance_sampling_level":      {doc: "TRL's key: `token` (a ratio per token) or `sequence` (GSPO: one ratio per sequence, exp of the mean of its tokens' log-ratios, clipped as a whole; its gradient reaches each token through the mean, as in TRL's importance_sampling_level = \"sequence\"). Sequence applies to dapo, grpo and dr_grpo."},
	"loss.beta":                           {doc: "Weight of the k3 KL penalty to the base model; 0 disables it (and its extra forward pass). It is added after the behaviour correction, as in TRL."},
	"loss.dppo_mask_low":                  {doc: "loss_type = \"dppo\": a token with A ≤ 0 whose probability fell by more than this against the sampler's is masked (prime-rl's `dppo_mask_low`)."},
	"loss.dppo_mask_high":                 {doc: "loss_type = \"dppo\": a token with A > 0 whose probability rose by more than this against the sampler's is masked (prime-rl's `dppo_mask_high`)."},
	"loss.adv_tau":                        {doc: "loss_type = \"dppo\": multiplies the advantage (prime-rl's `adv_tau`)."},
	"loss.kl_tau":                         {doc: "loss_type = \"dppo\": weight of the squared log-ratio to the sampler's log-probs (prime-rl's `kl_tau`)."},
	"loss.importance_sampling_correction": {doc: "Correct for the sampler/trainer mismatch (bf16 sampling, a remote vLLM) with the weight ρ = exp(log π_old − log π_sampler), no gradient through it, multiplying each token's policy term: `none`, `token_truncate` (TIS: ρ per token clamped to [clip_min, clip_max]), `token_mask` (MIS: ρ per token, 0 outside the range), `sequence_truncate` or `sequence_mask` (ρ = exp of the sum over the rollout's tokens, one per rollout). With it on, π_old is the trainer's own log-probs (detached; one update per batch makes them the forward's), so the PPO/GSPO ratio and CISPO's weight start at 1. TRL: `vllm_importance_sampling_correction` + `vllm_importance_sampling_mode` (same mode names). Not with dppo, which masks against the sampler itself. Metrics: `mismatch_kl` (always: prime-rl's mean exp(Δ) − Δ − 1, Δ = log π − log π_sampler) and `is_clip_ratio/low`, `/high`, `/region` (tokens whose ρ was truncated or masked)."},
	"loss.importance_sampling_clip_min":   {doc: "Lower bound of the correction's range; 0 leaves it open (TRL's `vllm_importance_sampling_clip_min`)."},
	"loss.importance_sampling_clip_max":   {doc: "Upper bound of the correction's range (TRL's `vllm_importance_sampling_clip_max`, default 3); `inf` leaves it open."},
	"loss.filter_zero_advantages":         {doc: "Drop the groups whose rewards are all equal (every advantage exactly 0) before the training forward, so no compute goes to them and the loss is the other groups' alone; counted in `filter/zero_advantage_groups` and `filter/zero_advantage_rollouts`. prime-rl's `orchestrator.train.filter_zero_advantages` (on by default there too, which prunes zero-advantage tokens); Lab's `zero_advantage` batch filters set it (see `pre_batch_filters`)."},
	"loss.scale_rewards":                  {doc: "Divide advantages by the std of their `group`, the whole `batch`, or `none`."},
	"loss.mask_truncated":                 {doc: "Leave completions cut off by max_tokens out of the loss."},
	"loss.routing_replay":                 {doc: "Mixture-of-experts models (Qwen3-MoE): the training forward routes each token to the experts it was routed to when it was sampled in-process, so the trained and the behaviour policy use the same experts even where a near-tie (bf16 rounding, the adapter's update) would flip; the `routing/mismatch` metric is the fraction of tokens whose recomputed top-k differs. Where the training forward runs a group's shared prompt once, the other rollouts' prompt tokens replay the first rollout's routing, and count as mismatched where their own record differs (possible only with nondeterministic sampling). Rollouts from a remote server carry no routing and are routed afresh."},

	"optimizer":               {doc: "AdamW over the LoRA parameters."},
	"optimizer.lr":            {doc: "Peak learning rate (Lab's hosted LoRA default). Top-level `learning_rate` sets it too."},
	"optimizer.betas":         {doc: "Adam β1, β2."},
	"optimizer.eps":           {doc: "Adam ε."},
	"optimizer.weight_decay":  {doc: "Decoupled weight decay."},
	"optimizer.max_grad_norm": {doc: "Clip the global gradient L2 norm; 0 disables clipping."},
	"optimizer.warmup_steps":  {doc: "Linear warm-up steps (≤ max_steps)."},
	"optimizer.schedule":      {doc: "After warm-up: `constant` or `cosine` (down to min_lr_ratio × lr at max_steps)."},
	"optimizer.min_lr_ratio":  {doc: "Floor of the cosine schedule as a fraction of lr."},

	"checkpoint":           {doc: "Checkpoints for resuming (grpo's table)."},
	"checkpoint.interval":  {doc: "Save every `interval` steps, and always after the last step; 0 saves only at the end. Lab's `[checkpoints] interval` sets it too."},
	"checkpoint.keep_last": {doc: "Keep the newest `keep_last` checkpoints; 0 keeps all."},
	"checkpoint.dir":       {doc: "Checkpoint directory, relative to the run directory and inside it (no absolute path, no `..`)."},

	"inference":                {doc: "Generate the rollouts on an OpenAI-compatible server (vLLM, `grpo serve`) instead of in this process: set `url` or `endpoint_id`. After each optimiser step the trainer writes the adapter to `inference/step-N` in the run directory and has the server load it as `step-N` (the server must read that path); see docs/inference.md. Left out, rollouts are generated here."},
	"inference.url":            {doc: "The server's API root, e.g. `\"http://127.0.0.1:8000/v1\"`.", def: "unset"},
	"inference.model":          {doc: "The base model's name on the server at `url` (vLLM's `--served-model-name`).", def: "`model`"},
	"inference.key":            {doc: "Name of the environment variable holding the server's API key (vLLM's `--api-key`); empty sends none."},
	"inference.endpoint_id":    {doc: "Instead of `url`: an endpoint of `endpoints_path`; its replicas share the requests, and each loads every step's adapter.", def: "unset"},
	"inference.endpoints_path": {doc: "The endpoints.toml `endpoint_id` is looked up in, relative to the working directory."},
	"inference.timeout":        {doc: "Seconds one request may take (a turn's generation, an adapter load) before it is retried or fails."},
	"inference.max_concurrent": {doc: "Requests in flight at once (one per episode turn)."},

	"learning_rate":                      {doc: "Lab alias of `[optimizer] lr`; an error if both are given and differ.", def: "unset"},
	"lora_alpha":                         {doc: "Lab alias of `[lora] alpha`; an error if both are given and differ.", def: "unset"},
	"checkpoints":                        {doc: "Lab's checkpoint table."},
	"checkpoints.interval":               {doc: "Lab alias of `[checkpoint] interval`; an error if both are given and differ.", def: "unset"},
	"checkpoints.keep_cloud":             {doc: "Lab: checkpoints kept in Prime's cloud.", def: "unset", ignored: "checkpoints are kept locally; use [checkpoint] keep_last"},
	"max_async_level":                    {doc: "How many optimiser steps a rollout's policy may lag the trainer's (Lab's key; prime-rl's `max_off_policy_steps`). With `[inference]` and k ≥ 1, a producer keeps the server busy while the trainer trains: groups (one example's rollouts) start as others end (at most `[inference] max_concurrent / rollouts_per_example` at once, and at most k batches ahead of the trainer), each with the adapter the server holds then, and a step trains on `batch_size` rollouts finished whose policy is at most k steps older than the trainer's, oldest policy first; older ones are dropped, and cancelled while still playing. docs/inference.md says more. Metrics: `off_policy/age_mean` and `off_policy/age_max` (steps between the trained-on rollouts' policy and the trainer's) and `off_policy/dropped_rollouts`. A resumed run loses the rollouts that were in flight. The behaviour log-probs of the loss's corrections are the server's. With `[buffer]`, the difficulty pools judge each group as it is handed out, and a group they drop gives its place to the next one finished, up to `oversampling_factor` × the batch looked at per step. 0 or unset: each step generates its rollouts with the current policy, then trains (always so in process). prime lab doctor calls it outdated; grpo warns with its text.", def: "unset (0)", deprecated: "`max_async_level` is outdated; remove it from Lab configs."},
	"max_off_policy_steps":               {doc: "prime-rl's name for `max_async_level` (the most policy steps a trained-on rollout may lag), the same setting here; giving both with different values is an error.", def: "unset (0)", deprecated: "`max_off_policy_steps` is outdated; remove it from Lab configs."},
	"oversampling_factor":                {doc: "Lab: extra rollouts generated to keep the inference fleet busy. Here: with `[buffer] online_difficulty_filtering`, a step that dropped groups refills them from fresh examples until it has `batch_size` rollouts to train on or has generated `oversampling_factor × batch_size` in all (unset: 2); without it, a step generates exactly batch_size rollouts and the key is ignored.", def: "unset", deprecated: "`oversampling_factor` is outdated; remove it from Lab configs."},
	"max_inflight_rollouts":              {doc: "Lab: cap on concurrent rollouts on the inference fleet.", def: "unset", ignored: hostedOnly + ": rollout concurrency on its inference fleet"},
	"trajectory_strategy":                {doc: "Lab (deprecated there): how multi-turn trajectories are split.", ignored: "grpo always trains on the exact tokens of the whole trajectory, and Lab itself now ignores it", deprecated: "`trajectory_strategy` is deprecated and ignored."},
	"trajectoryStrategy":                 {doc: "Lab (deprecated there): the camel-case spelling of `trajectory_strategy`.", ignored: "grpo always trains on the exact tokens of the whole trajectory, and Lab itself now ignores it", deprecated: "`trajectoryStrategy` is deprecated and ignored."},
	"env_file":                           {doc: "Lab (deprecated): file(s) of secrets for env servers.", def: "unset", ignored: "grpo's environments read secrets from the process environment", deprecated: "`env_file` is deprecated; use `env_files`."},
	"env_files":                          {doc: "Lab: file(s) of secrets for env servers.", ignored: "grpo's environments read secrets from the process environment"},
	"checkpoint_id":                      {doc: "Lab: warm-start from a checkpoint stored in Prime's cloud.", ignored: "it names a checkpoint in Prime's cloud; resume a local run with the CLI instead"},
	"cluster_name":                       {doc: "Lab (admin): target cluster.", ignored: hostedOnly},
	"buffer":                             {doc: "Difficulty pools and online difficulty filtering, as Lab's `[buffer]` (deprecated there) and prime-rl's orchestrator buffer run them; off unless a key below turns it on. Metrics under prime-rl's names: `evicted_examples/easy|hard` (share of the step's examples set aside), `filtered_rollouts/easy|hard` (share of its rollouts dropped), `pool/easy|normal|hard` (share of all examples in each pool), `filter/refill_groups` (groups generated to replace dropped ones). The pools are saved in each checkpoint."},
	"buffer.online_difficulty_filtering": {doc: "Drop the groups whose mean reward is exactly 0 or 1 (no rollout or every rollout succeeded: every advantage is 0) before training, and refill the step with groups of fresh examples, up to `oversampling_factor × batch_size` rollouts generated in all. Reward metrics count every rollout generated; the loss only the kept ones."},
	"buffer.easy_threshold":              {doc: "An example whose group's mean reward is ≥ this moves to the easy pool and is no longer drawn.", def: "unset (no easy pool)"},
	"buffer.hard_threshold":              {doc: "An example whose group's mean reward is ≤ this moves to the hard pool and is no longer drawn. Must be below `easy_threshold`.", def: "unset (no hard pool)"},
	"buffer.easy_fraction":               {doc: "Share of the easy pool that returns to the drawn examples when the run resumes (prime-rl's meaning), chosen with `seed`."},
	"buffer.hard_fraction":               {doc: "Share of the hard pool that returns to the drawn examples when the run resumes."},
	"buffer.env_ratios":                  {doc: "Lab's per-environment shares of each batch, one per `[[env]]` in order: the same as setting each `[[env]] weight` (an error if both are given and differ).", def: "unset"},
	"buffer.seed":                        {doc: "Seeds which pooled examples return at a resume.", def: "the run's `seed`"},
	"val":                                {doc: "Lab: validation runs during training.", ignored: "grpo evaluates through [eval] only"},
	"pre_batch_filters":                  {doc: "Lab (prime-rl's orchestrator filters): rollout filters before a batch is assembled. Their `zero_advantage` entries decide `[loss] filter_zero_advantages` as prime-rl did: on when a pre-batch entry has `enforce = true`, a post-batch one has `enforce` true or unset, or `post_batch_filters` is left out (its default list enforces it); an error if that contradicts `filter_zero_advantages` written in [loss]. Entries of other types (`gibberish`, `repetition`) are accepted and ignored, with a warning."},
	"post_batch_filters":                 {doc: "Lab: rollout filters after a batch is assembled; see `pre_batch_filters`."},
	"adapters":                           {doc: "Lab: adapter uploads to Prime's cloud.", ignored: "grpo writes the adapter into the run directory"},
	"infrastructure":                     {doc: "Lab: compute size of the hosted run.", ignored: hostedOnly},
	"tailscale":                          {doc: "Lab: tailnet sidecar for hosted env servers.", ignored: hostedOnly},
	"run_config":                         {doc: "Lab: free-form metadata sent with the hosted run.", ignored: hostedOnly},
}
