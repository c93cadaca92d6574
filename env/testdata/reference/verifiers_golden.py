#!/usr/bin/env python3
"""Regenerates env/testdata/verifiers_golden.jsonl by running the reference
code itself on each case: verifiers' parsers, MathRubric.correct_answer and
the environments' reward functions (verifiers 8d4b33247, 2026-04-28),
math-verify 0.8.0 (5d148cf) over latex2sympy2_extended 1.10.2 (0873506),
and TextArena's Wordle-v0 (548413a04, the last commit before 2026-04-28)
for the game's replies.

Nothing is pip-installed: each reference file is loaded on its own from a
checkout, and the imports that pull in the rest of a package (verifiers'
Rubric and Environment classes, datasets, nltk) are replaced by the small
stubs below, which only record what the environment registers. sympy and
antlr4-python3-runtime 4.13.2 must be importable; latex2sympy2_extended's
ANTLR parser is generated once with the jar its repository ships:

    cd $L2S/src/latex2sympy2_extended &&
    java -jar ../../antlr-4.13.2-complete.jar -Dlanguage=Python3 PS.g4 -o gen/antlr4_13_2 &&
    touch gen/__init__.py gen/antlr4_13_2/__init__.py

Usage (each variable names the root of a checkout at the commit above):

    VERIFIERS=... MATH_VERIFY=... LATEX2SYMPY=... TEXTARENA=... \
        python3 verifiers_golden.py > ../verifiers_golden.jsonl

Every case is a dict in CASES below; the script adds reward and metrics
(each reward function's value, unweighted, named as in verifiers) and
"source": "ran", and "version": "v0" for the builtins that also have a v1
behaviour (V0_ENVS). The Go test (env/golden_test.go) scores the same
completions with grpo's builtins and compares.
"""

import asyncio
import inspect
import importlib.util
import json
import logging
import os
import sys
import types

VF = os.environ["VERIFIERS"]
MV = os.environ["MATH_VERIFY"]
L2S = os.environ["LATEX2SYMPY"]
TA = os.environ["TEXTARENA"]
sys.path[:0] = [os.path.join(MV, "src"), os.path.join(L2S, "src")]


def package(name, path=None):
    m = types.ModuleType(name)
    m.__path__ = [path] if path else []
    sys.modules[name] = m
    return m


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)
    return m


# --- verifiers: real parsers and MathRubric, stub Rubric/Environment -------
vf = package("verifiers")
package("verifiers.parsers")
package("verifiers.rubrics")
package("verifiers.utils")
package("verifiers.envs")
package("verifiers.envs.integrations")
vtypes = types.ModuleType("verifiers.types")
vtypes.Messages = list
vtypes.RewardFunc = object
vtypes.State = dict
sys.modules["verifiers.types"] = vtypes
parser_mod = load("verifiers.parsers.parser", f"{VF}/verifiers/parsers/parser.py")
xml_mod = load("verifiers.parsers.xml_parser", f"{VF}/verifiers/parsers/xml_parser.py")
mt_mod = load("verifiers.parsers.maybe_think_parser", f"{VF}/verifiers/parsers/maybe_think_parser.py")
load("verifiers.utils.data_utils", f"{VF}/verifiers/utils/data_utils.py")


class Rubric:
    """Records reward functions and weights, as verifiers' Rubric does."""

    def __init__(self, funcs=None, weights=None, parser=None, **_):
        self.funcs = list(funcs or [])
        self.weights = list(weights or [1.0] * len(self.funcs))
        self.parser = parser or parser_mod.Parser()
        self.logger = logging.getLogger("verifiers.rubrics")

    def add_reward_func(self, func, weight=1.0):
        self.funcs.append(func)
        self.weights.append(weight)


rubric_mod = types.ModuleType("verifiers.rubrics.rubric")
rubric_mod.Rubric = Rubric
sys.modules["verifiers.rubrics.rubric"] = rubric_mod
thread_utils = types.ModuleType("verifiers.utils.thread_utils")
thread_utils.register_executor = lambda *a, **k: None
thread_utils.unregister_executor = lambda *a, **k: None
sys.modules["verifiers.utils.thread_utils"] = thread_utils
math_rubric_mod = load("verifiers.rubrics.math_rubric", f"{VF}/verifiers/rubrics/math_rubric.py")


class Env:
    """Stands in for SingleTurnEnv, MultiTurnEnv and TextArenaEnv: keeps the rubric."""

    def __init__(self, *a, rubric=None, parser=None, **k):
        self.rubric, self.parser = rubric, parser


vf.Parser = parser_mod.Parser
vf.XMLParser = xml_mod.XMLParser
vf.MaybeThinkParser = mt_mod.MaybeThinkParser
vf.Rubric = Rubric
vf.MathRubric = math_rubric_mod.MathRubric
vf.SingleTurnEnv = vf.MultiTurnEnv = vf.Environment = Env
vf.Messages, vf.State = list, dict
vf.stop = vf.cleanup = lambda f: f
vf.UserMessage = lambda content: {"role": "user", "content": content}
ta_env_mod = types.ModuleType("verifiers.envs.integrations.textarena_env")
ta_env_mod.TextArenaEnv = Env
sys.modules["verifiers.envs.integrations.textarena_env"] = ta_env_mod
datasets = types.ModuleType("datasets")
datasets.load_dataset = datasets.Dataset = None
sys.modules["datasets"] = datasets

# --- TextArena: the real Wordle env and wrappers, nltk stubbed -------------
nltk = types.ModuleType("nltk")
nltk.download = lambda *a, **k: True
nltk.pos_tag = lambda ws: [(w, "NN") for w in ws]
corpus = types.ModuleType("nltk.corpus")
# NLTK's corpora are not on this machine. "en" (the extra dictionary) is
# left empty, so golden guesses are words of the bundled hunspell lists;
# "en-basic" (where secrets are drawn from) needs one word for reset(), and
# each game then sets its own secret, as TextArenaEnv.setup_state does.
corpus.words = types.SimpleNamespace(words=lambda kind="en": ["crane"] if kind == "en-basic" else [])
nltk.corpus = corpus
sys.modules["nltk"], sys.modules["nltk.corpus"] = nltk, corpus
ta = package("textarena", f"{TA}/textarena")
for sub in ["envs", "envs.Wordle", "wrappers", "wrappers.ObservationWrappers", "wrappers.ActionWrappers"]:
    package(f"textarena.{sub}", f"{TA}/textarena/{sub.replace('.', '/')}")
core = importlib.import_module("textarena.core")
for k in dir(core):
    if not k.startswith("_"):
        setattr(ta, k, getattr(core, k))
state = importlib.import_module("textarena.state")
ta.SinglePlayerState = state.SinglePlayerState
wordle_ta = importlib.import_module("textarena.envs.Wordle.env")
llm_obs = importlib.import_module("textarena.wrappers.ObservationWrappers.llm_observation_wrapper")
act_fmt = importlib.import_module("textarena.wrappers.ActionWrappers.action_formatting_wrapper")


def load_env(name):
    return load(f"env_{name}", f"{VF}/environments/{name}/{name}.py")


def score(rubric, completion, answer, info):
    """verifiers' Rubric.score_rollout for one rollout: each function's value
    and their weighted sum."""
    metrics, reward = {}, 0.0
    for f, w in zip(rubric.funcs, rubric.weights):
        kwargs = dict(parser=rubric.parser, completion=completion, answer=answer,
                      info=info, state={"info": info}, prompt=[])
        params = inspect.signature(f).parameters
        if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
            kwargs = {k: v for k, v in kwargs.items() if k in params}
        v = f(**kwargs)
        if asyncio.iscoroutine(v):
            v = asyncio.run(v)
        metrics[f.__name__] = float(v)
        reward += float(v) * w
    return reward, metrics


def new_wordle():
    """Wordle-v0 as ta.make builds it: language set, then its default wrappers."""
    raw = wordle_ta.WordleEnv(word_length=5, num_guesses=6)
    raw.set_lang("en")
    return act_fmt.ActionFormattingWrapper(llm_obs.LLMObservationWrapper(raw))


def wordle_game(secret, turns):
    """Plays assistant turns through TextArena's Wordle-v0 as TextArenaEnv
    does and returns the completion with the game's replies, and whether
    the game ended."""
    env = new_wordle()
    env.reset(num_players=1)
    env.get_observation()  # the prompt: it is the example's question, not part of the completion
    env.state.game_state["secret_word"] = secret
    parser = xml_mod.XMLParser(fields=["guess"], answer_field="guess")
    feedback_fn = wordle_mod.wordle_feedback_fn
    completion = []
    for t in turns:
        completion.append({"role": "assistant", "content": t})
        guess = parser.parse_answer(completion)
        env.step(str(guess))
        if env.state.done:
            completion.append({"role": "user", "content": env.state.game_info[0]["reason"]})
            break
        _, obs = env.get_observation()
        completion.append({"role": "user", "content": str(feedback_fn(obs))})
    return completion, env.state.done


def wordle_prompt():
    env = new_wordle()
    env.reset(num_players=1)
    return env.get_observation()[1]


reverse_mod = load_env("reverse_text")
gsm8k_mod = load_env("gsm8k")
wordle_mod = load_env("wordle")
sort_mod = load_env("alphabet_sort")
RUBRICS = {
    "reverse-text": lambda args: reverse_mod.load_environment(**args).rubric,
    "gsm8k": lambda args: gsm8k_mod.load_environment(**args).rubric,
    # grpo's math env scores as verifiers' MathRubric() with its default
    # parser, which is what gsm8k and math_python use.
    "math": lambda args: math_rubric_mod.MathRubric(),
    "wordle": lambda args: wordle_mod.load_environment(**args).rubric,
    "alphabet-sort": lambda args: sort_mod.load_environment(**args).rubric,
}

from golden_cases import CASES  # noqa: E402  (the case list, beside this file)

# The builtins whose default is now verifiers a60a606's v1 taskset: these
# rows test their "v0" behaviour (verifiers_v1_golden.py writes the v1 ones).
V0_ENVS = {"gsm8k", "reverse-text", "alphabet-sort", "wordle"}


def main():
    rubrics = {}
    for c in CASES:
        c = dict(c)
        if "wordle_turns" in c:
            c["completion"], c["game_over"] = wordle_game(c["answer"], c.pop("wordle_turns"))
            c["replayed"] = True
            # TextArenaEnv's question is the game's first observation.
            c["prompt"] = [{"role": "system", "content": wordle_mod.DEFAULT_SYSTEM_PROMPT},
                           {"role": "user", "content": wordle_prompt()}]
        key = (c["env"], json.dumps(c.get("args", {}), sort_keys=True))
        if key not in rubrics:
            rubrics[key] = RUBRICS[c["env"]](c.get("args", {}))
        reward, metrics = score(rubrics[key], c["completion"], c.get("answer", ""), c.get("info", {}))
        if c["env"] in V0_ENVS:
            c["version"] = "v0"
        c.update(reward=reward, metrics=metrics, source="ran")
        print(json.dumps(c, ensure_ascii=False))


if __name__ == "__main__":
    main()
