package trainer

// The files of a new workspace (grpo init). Configs use the layout of
// Prime Intellect Lab's workspace (prime lab setup) so they run unchanged
// on either side; their sizes are for one local GPU. A test parses every
// config and validates its environments.
var workspaceFiles = []WorkspaceFile{
	{"configs/rl/reverse-text.toml", `# Reverse a sentence character by character; reward = difflib ratio
# against the reversed text. The quickest task to see GRPO learn.
#   grpo eval reverse-text -m Qwen/Qwen3-0.6B -n 20 -r 1     # baseline
#   grpo train configs/rl/reverse-text.toml
model = "Qwen/Qwen3-0.6B"
max_steps = 100
batch_size = 64              # rollouts per step: 8 examples × 8 rollouts
rollouts_per_example = 8

[sampling]
max_tokens = 128
enable_thinking = false

[[env]]
id = "primeintellect/reverse-text"

[eval]
interval = 20
num_examples = 50
rollouts_per_example = 1

[lora]
rank = 16
alpha = 32
`},
	{"configs/rl/gsm8k.toml", `# Grade-school math with a boxed numeric answer (GSM8K), evaluated on
# the test split every 25 steps.
model = "Qwen/Qwen3-0.6B"
max_steps = 200
batch_size = 128
rollouts_per_example = 16
learning_rate = 1e-5

[sampling]
max_tokens = 1024
temperature = 1.0

[[env]]
id = "primeintellect/gsm8k"
args = { num_train_examples = -1, num_eval_examples = 200 }

[eval]
interval = 25
num_examples = 100
rollouts_per_example = 1

[[eval.env]]
id = "primeintellect/gsm8k"
args = { num_eval_examples = 200 }
`},
	{"configs/rl/alphabet-sort.toml", `# Multi-turn: keep a list of names sorted alphabetically as new names
# arrive each turn; reward = similarity to the sorted list.
model = "Qwen/Qwen3-1.7B"
max_steps = 100
batch_size = 128
rollouts_per_example = 8
learning_rate = 1e-4
lora_alpha = 64

[sampling]
max_tokens = 768

[[env]]
id = "primeintellect/alphabet-sort"
args = { min_turns = 3, max_turns = 3, min_names_per_turn = 1, max_names_per_turn = 4, similarity_power = 8, power_per_turn = false }

[wandb]
project = "alphabet-sort"
enabled = false              # set true (and log in to W&B) to log the run there
`},
	{"configs/rl/wordle.toml", `# Multi-turn Wordle with feedback after each guess (TextArena rules);
# rewards: correct answer, partial letters, fewer guesses, format.
model = "Qwen/Qwen3-1.7B"
max_steps = 300
batch_size = 128
rollouts_per_example = 16

[sampling]
max_tokens = 1024
enable_thinking = true

[[env]]
id = "primeintellect/wordle"
args = { num_train_examples = 2000, num_eval_examples = 20 }

[eval]
interval = 50
num_examples = 20
rollouts_per_example = 2
`},
	{"configs/eval/minimal.toml", `# The smallest eval config: one environment, the defaults for the rest
# (5 examples, 3 rollouts each, max_tokens 512, temperature 1).
#   grpo eval configs/eval/minimal.toml
#   grpo eval configs/eval/minimal.toml -m Qwen/Qwen3-1.7B    # another model
model = "Qwen/Qwen3-0.6B"

[[eval]]
id = "reverse-text"
`},
	{"configs/eval/multi-env.toml", `# Several environments in one run: top-level keys are defaults, each
# [[eval]] block may override them. Prints one table row per environment
# and writes every rollout to eval-multi-env-<time>.jsonl.
#   grpo eval configs/eval/multi-env.toml
#   grpo eval configs/eval/multi-env.toml --adapter runs/RUN/adapter
model = "Qwen/Qwen3-0.6B"
rollouts_per_example = 3
max_tokens = 512
temperature = 0.7

[[eval]]
id = "reverse-text"
num_examples = 50

[[eval]]
id = "gsm8k"
num_examples = 50
max_tokens = 1024
args = { num_eval_examples = 200 }

[[eval]]
id = "alphabet-sort"
num_examples = 20
args = { min_turns = 3, max_turns = 3 }

[[eval]]
id = "wordle"
num_examples = 20
rollouts_per_example = 2

[[eval]]
id = "capitals"              # the example environment in environments/capitals
num_examples = -1            # the whole eval split
`},
	{"configs/gepa/base.toml", `# GEPA (prompt optimisation by reflective evolution) in Prime's format,
# for 'prime gepa run' / vf-gepa. grpo reads this layout but does not
# run GEPA yet: it trains weights (LoRA) with GRPO, not prompts. Keep the
# file to run GEPA with Prime's tools on the same environments.
env_id = "primeintellect/reverse-text"
model = "openai/gpt-4.1-mini"
reflection_model = "openai/gpt-4.1-mini"
endpoints_path = "../endpoints.toml"

# Arguments passed to the environment.
[env_args]
# num_train_examples = 1000

# Extra keyword arguments for the environment's constructor.
[extra_env_kwargs]

# Optimisation budget.
[gepa]
max_calls = 500
num_train = 100
num_val = 50
minibatch_size = 3

# How rollouts are run.
[execution]
max_concurrent = 32
seed = 0
`},
	{"environments/README.md", `# Environments

Each directory here is one environment that grpo finds by its id when you
work in this workspace (grpo looks in ./environments/ and in the installed
environments, $GRPO_HOME/environments, ~/.grpo by default):

    grpo env list                 # builtins and the environments found here
    grpo env show capitals        # args, split sizes and a sample prompt
    grpo eval capitals -m Qwen/Qwen3-0.6B -n 10
    grpo env install environments/capitals   # make it available everywhere

An environment is a directory with environment.toml (dataset, prompt,
parser, rubric) and its data. capitals/ is a complete example: copy it,
change id, the data and the rubric. The keys:

    id = "capitals"                    # the name configs use: [[env]] id = "capitals"
    description = "..."
    system_prompt = "..."
    prompt_template = "... {country}"  # {field} of a data row
    parser = "xml:answer"              # xml:TAG | boxed | hash | think | none

    [dataset]                          # local files (.jsonl, .jsonl.gz, .parquet) or hub = "org/name"
    train = "data/train.jsonl"
    eval = "data/eval.jsonl"
    question_field = "country"
    answer_field = "capital"

    [[rubric]]                         # weighted terms, reward = clamped sum in [0, 1]
    type = "exact"                     # exact | numeric | math | ratio | format | command | http | judge
    weight = 0.9

See 'grpo env --help' for every rubric type (command rubrics run your own
script, e.g. python3 reward.py, in the environment's directory).
`},
	{"environments/capitals/environment.toml", `# Name the capital city of a country. A complete custom environment:
#   grpo env show capitals
#   grpo eval capitals -m Qwen/Qwen3-0.6B -n -1 -r 4
id = "capitals"
description = "name the capital city of a country, inside <answer> tags"
system_prompt = "Answer with the capital city only, inside <answer></answer> tags."
prompt_template = "What is the capital of {country}?"
parser = "xml:answer"

[dataset]
train = "data/train.jsonl"
eval = "data/eval.jsonl"
question_field = "country"
answer_field = "capital"

[[rubric]]
type = "exact"
weight = 0.9

[[rubric]]
type = "format"
weight = 0.1
tags = ["answer"]
`},
	{"environments/capitals/data/train.jsonl", `{"country": "France", "capital": "Paris"}
{"country": "Germany", "capital": "Berlin"}
{"country": "Italy", "capital": "Rome"}
{"country": "Spain", "capital": "Madrid"}
{"country": "Portugal", "capital": "Lisbon"}
{"country": "Japan", "capital": "Tokyo"}
{"country": "Canada", "capital": "Ottawa"}
{"country": "Australia", "capital": "Canberra"}
{"country": "Brazil", "capital": "Brasília"}
{"country": "Egypt", "capital": "Cairo"}
{"country": "Kenya", "capital": "Nairobi"}
{"country": "Norway", "capital": "Oslo"}
{"country": "Poland", "capital": "Warsaw"}
{"country": "Turkey", "capital": "Ankara"}
{"country": "India", "capital": "New Delhi"}
{"country": "Mexico", "capital": "Mexico City"}
`},
	{"environments/capitals/data/eval.jsonl", `{"country": "Greece", "capital": "Athens"}
{"country": "Sweden", "capital": "Stockholm"}
{"country": "Argentina", "capital": "Buenos Aires"}
{"country": "Vietnam", "capital": "Hanoi"}
{"country": "Morocco", "capital": "Rabat"}
{"country": "New Zealand", "capital": "Wellington"}
`},
	{"AGENTS.md", `# AGENTS.md

Guidance for coding agents (and people) working in this grpo workspace.
grpo post-trains open-weight LLMs with GRPO and LoRA on a local GPU (or
the CPU), from TOML configs in the layout of Prime Intellect Lab.

## Layout

- configs/rl/*.toml     training configs: 'grpo train configs/rl/NAME.toml'
- configs/eval/*.toml   eval configs: 'grpo eval configs/eval/NAME.toml'
- configs/gepa/*.toml   GEPA prompt-optimisation configs in Prime's format
                        (grpo does not run GEPA; Prime's tools do)
- environments/NAME/    custom environments (environment.toml + data)
- runs/NAME-TIME/       one directory per training run (written by grpo train)

## Commands

    grpo env list | grpo env show ID              what environments exist, their args
    grpo eval ID -m MODEL -n 20 -r 1               baseline before training
    grpo estimate configs/rl/NAME.toml             memory and time before a run
    grpo train configs/rl/NAME.toml                train; Ctrl-C checkpoints and stops
    grpo train --resume runs/RUN                   continue an interrupted run
    grpo runs list                                 runs, steps, rewards, status
    grpo runs status RUN | grpo runs logs RUN --follow
    grpo eval ID -m MODEL --adapter runs/RUN/adapter -n 100   after training

Every command has '--help' with examples; every config key is in grpo's
docs/config.md. Configs are strict: an unknown key or a bad value is an
error naming the file, line and key, with the fix.

## Working rules

- Measure before training: run 'grpo eval' on the base model with the
  same environment and sampling, and compare with the run's eval rewards.
- Change one setting per run and name runs after it (grpo train --output
  runs/gsm8k-lr1e-5); configs are copied into the run as config.toml.
- To add an environment, copy environments/capitals, change its id, data
  and rubric, then check it with 'grpo env show ID' and a small
  'grpo eval ID -m MODEL -n 5' before training on it. Keep rewards in
  [0, 1] with 1 meaning fully correct (pass@k counts rollouts at 1).
- Builtin environments take args (grpo env show ID lists them); pass them
  as args = { ... } in [[env]] blocks or --args '{...}' to grpo eval.

## Reading a run

runs/RUN/ holds config.toml, metrics.jsonl (one JSON object per step:
reward, loss, kl, entropy, grad_norm, lr, clip ratios, per-env rewards),
eval.jsonl (one object per evaluation), log.txt, rewards.png (reward and
eval curves), checkpoints/step-N/ and adapter/ (a PEFT adapter: vLLM and
PEFT load it as it is). Warnings in log.txt (for example "all rewards
equal") mean the run has no learning signal: make the task easier, raise
rollouts_per_example or the temperature.
`},
}
