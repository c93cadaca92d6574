#!/usr/bin/env python3
"""Regenerates env/testdata/verifiers_v1_games_golden.jsonl: the v1 (default)
behaviour of grpo's wordle and wiki-search builtins, computed by running the
reference code itself on each case:

- verifiers a60a606 (a60a606ecc4d309247edf9ff92c3eabca362781f, 2026-08-21):
  verifiers/v1/tasksets/textarena/taskset.py (TextArenaTaskset.load, the
  seeded task stream and prompt; TextArenaEnv.run, which plays each reply
  through the game and records game_reward), environments/wordle (pins
  Wordle-v0), environments/wiki_search/wiki_search/{servers/wiki.py,
  judge.py, judge_prompt.txt} and verifiers/v1/{judge.py,
  judges/reference.py, utils/score.py} (the reference judge: prompt,
  verdict parsing, the empty-reply rule);
- TextArena 0ce4609 (0ce46093cd84cc81b9c4b6cb03c24a2b296a0d76): verifiers
  pins textarena 0.7.4, whose Wordle env, core, state, wrappers and
  registration are unchanged from 0.7.3 (687a87c) through 0ce4609.

Nothing is pip-installed (pydantic 2 must be importable). Each reference
file is loaded on its own; what it imports from the rest of its package is
replaced by the small stubs below:
- verifiers.v1's Task/Taskset/Env base classes only hold what they are
  given; the agent's interaction plays scripted replies, stops at max_turns
  as RolloutLimits does (checked before each model turn) or when the script
  runs out (a rollout cut off by its context), and last_reply strips as
  Segment.last_reply does;
- NLTK is absent: its "en-basic" list (where Wordle draws secrets) is
  grpo's builtin secret list (env/wordle/words.go, read by this script),
  every word tagged a noun, and "en" is empty, so guesses are checked
  against TextArena's bundled hunspell lists, as grpo checks them;
- the MCP glue of wiki-search's tools is FastMCP 1.28.1's, restated in
  mcp_reply below (a list result is one text block per item, each
  pydantic_core.to_json(item, indent=2); "[]" for none; a raised error is
  "Error executing tool NAME: ERROR"; the null harness joins blocks with
  "\\n"); the corpus is grpo's bundled pages (env/wikisearch/wikidata);
  search_pages (ChromaDB embeddings) is not run;
- the judge's OpenAI client answers with each case's scripted reply and
  records the prompt it was sent.

Usage (each variable names the root of a checkout at the commit above):

    VERIFIERS=... TEXTARENA=... python3 verifiers_v1_games_golden.py \\
        > ../verifiers_v1_games_golden.jsonl

Every row has "version": "v1" and "source": "ran". Wordle rows are games:
the assistant turns with the game's replies (a cut-off game keeps the user
turn run() handed to the refused turn), "replayed": true and "game_over".
Wiki-search rows have a "kind": "tasks" (what WikiSearchTaskset.load gives
over grpo's bundled questions: prompt, question, answer), "tool" (a call's
"tool_reply" and the tool's "description") or "judge" (a completion, the
judge's scripted "judge_reply", the request the judge got "judge_request",
and the reward, or "judge_error" when the judge gave no verdict). The
cases are in verifiers_v1_games_cases.py beside this file.
"""

import asyncio
import importlib
import importlib.util
import json
import os
import random
import re
import sys
import types
import typing

VF = os.environ["VERIFIERS"]
TA = os.environ["TEXTARENA"]
HERE = os.path.dirname(os.path.abspath(__file__))
GRPO_ENV = os.path.normpath(os.path.join(HERE, "..", ".."))


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


def module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


# --- grpo's builtin secret words, as NLTK's en-basic --------------------------
with open(os.path.join(GRPO_ENV, "wordle", "words.go")) as f:
    SECRETS = re.search(r"strings\.Fields\(`(.*?)`\)", f.read(), re.S).group(1).split()

nltk = module("nltk", download=lambda *a, **k: True, pos_tag=lambda ws: [(w, "NN") for w in ws])
corpus = module("nltk.corpus", words=types.SimpleNamespace(words=lambda kind="en": list(SECRETS) if kind == "en-basic" else []))
nltk.corpus = corpus

# --- TextArena: the real Wordle env, state, wrappers and registry ------------
ta = package("textarena", f"{TA}/textarena")
for sub in ["envs", "envs.Wordle", "envs.utils", "wrappers", "wrappers.ObservationWrappers", "wrappers.ActionWrappers"]:
    package(f"textarena.{sub}", f"{TA}/textarena/{sub.replace('.', '/')}")
core = importlib.import_module("textarena.core")
for k in dir(core):
    if not k.startswith("_"):
        setattr(ta, k, getattr(core, k))
ta.SinglePlayerState = importlib.import_module("textarena.state").SinglePlayerState
llm_obs = importlib.import_module("textarena.wrappers.ObservationWrappers.llm_observation_wrapper")
act_fmt = importlib.import_module("textarena.wrappers.ActionWrappers.action_formatting_wrapper")
registration = importlib.import_module("textarena.envs.registration")
# textarena/envs/__init__.py's Wordle-v0 line, with its DEFAULT_WRAPPERS.
registration.register_with_versions(
    id="Wordle-v0", entry_point="textarena.envs.Wordle.env:WordleEnv",
    wrappers={"default": [llm_obs.LLMObservationWrapper, act_fmt.ActionFormattingWrapper], "-train": []},
    hardcore=False, word_length=5, num_guesses=6)
ta.make = registration.make


# --- verifiers.v1: stub bases, real taskset/env code -------------------------
class Base:
    """A pydantic-free stand-in: keeps keyword fields; subscriptable."""

    def __init__(self, *args, **kw):
        self.__dict__.update(kw)

    def __class_getitem__(cls, _):
        return cls


class Task(Base):
    def __init__(self, data, config=None):
        self.data, self.config = data, config


class Taskset(Base):
    def __init__(self, config):
        self.config = config


vf = package("verifiers")
v1 = package("verifiers.v1")
package("verifiers.v1.tasksets")
for name in ["TasksetConfig", "TaskData", "State", "TaskConfig", "EnvConfig", "AgentConfig", "Env", "Judges", "SharedToolsetConfig"]:
    setattr(v1, name, type(name, (Base,), {}))
v1.Task, v1.Taskset = Task, Taskset
vf.v1 = v1
textarena_ts = load("verifiers.v1.tasksets.textarena.taskset", f"{VF}/verifiers/v1/tasksets/textarena/taskset.py")


class Segment:
    def __init__(self, reply=None):
        self.reply, self.terminated = reply, reply is None

    @property
    def last_reply(self):
        return (self.reply or "").strip()  # Segment.last_reply


class Trace:
    def __init__(self):
        self.rewards, self.info = {}, {}

    def record_reward(self, name, value, weight=1.0):
        self.rewards[name] = (float(value), float(weight))


class Interaction:
    """Plays scripted replies; max_turns is checked before each model turn."""

    def __init__(self, replies, max_turns):
        self.replies, self.max_turns = list(replies), max_turns
        self.trace, self.messages, self.turns = Trace(), [], 0

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False

    async def turn(self, message=None):
        if message is not None:
            self.messages.append({"role": "user", "content": message})
        if self.turns >= len(self.replies) or (self.max_turns is not None and self.turns >= self.max_turns):
            return Segment(None)
        reply = self.replies[self.turns]
        self.turns += 1
        self.messages.append({"role": "assistant", "content": reply})
        return Segment(reply)


def play_wordle(task, replies, max_turns):
    it = Interaction(replies, max_turns)
    agents = types.SimpleNamespace(player=types.SimpleNamespace(interaction=lambda t: it))
    env = textarena_ts.TextArenaEnv()
    asyncio.run(env.run(task, agents))
    return it


def wordle_tasks(n):
    cfg = types.SimpleNamespace(game="Wordle-v0", task=None)
    out = []
    for t in textarena_ts.TextArenaTaskset(cfg).load():
        out.append(t)
        if len(out) == n:
            return out


def secret_of(task):
    """The secret run() draws for the task: its seed, then make + reset."""
    random.seed(task.data.info["seed"])
    game = ta.make(env_id=task.data.info["game"])
    game.reset(num_players=1)
    return game.state.game_state["secret_word"]


# --- wiki-search: the real toolset and judges --------------------------------
import pydantic  # noqa: E402

for name in ["verifiers.v1.utils", "verifiers.v1.configs", "verifiers.v1.judges", "verifiers.v1.dialects", "verifiers.v1.clients", "renderers", "wiki_search", "wiki_search.servers"]:
    package(name)
module("renderers.base", MultiModalData=typing.Any)
module("math_verify", parse=None, verify=None)
module("math_verify.errors", TimeoutException=TimeoutError)
module("verifiers.v1.errors", SandboxError=OSError)
module("verifiers.v1.task", TaskData=object)
module("verifiers.v1.trace", Trace=object)
module("verifiers.v1.dialects.chat", message_to_wire=lambda m: m)
sys.modules["verifiers.v1.clients"].BaseClientConfig = type("BaseClientConfig", (pydantic.BaseModel,), {})
load("verifiers.v1.types", f"{VF}/verifiers/v1/types.py")
load("verifiers.v1.utils.generic", f"{VF}/verifiers/v1/utils/generic.py")
load("verifiers.v1.utils.score", f"{VF}/verifiers/v1/utils/score.py")
load("verifiers.v1.configs.judge", f"{VF}/verifiers/v1/configs/judge.py")
JUDGE_CALLS = []


class ScriptedClient:
    """build_async_openai's client: answers with the case's scripted reply."""

    def __init__(self, reply):
        self.reply = reply
        self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(create=self.create))

    async def create(self, **kwargs):
        JUDGE_CALLS.append(kwargs)
        message = types.SimpleNamespace(content=self.reply)
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)], usage=None)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False


JUDGE_REPLY = [None]
module("verifiers.v1.clients.base", build_async_openai=lambda config: ScriptedClient(JUDGE_REPLY[0]))
load("verifiers.v1.judge", f"{VF}/verifiers/v1/judge.py")
reference = load("verifiers.v1.judges.reference", f"{VF}/verifiers/v1/judges/reference.py")
v1.ReferenceJudgeConfig, v1.ReferenceJudge, v1.ID = reference.ReferenceJudgeConfig, reference.ReferenceJudge, str
v1.tool = lambda f=None, name=None: f if f is not None else (lambda g: g)
v1.Toolset = Base
WS = f"{VF}/environments/wiki_search/wiki_search"
wiki_judge = load("wiki_search.judge", f"{WS}/judge.py")
wiki_tools = load("wiki_search.servers.wiki", f"{WS}/servers/wiki.py")


class Rows(list):
    """datasets.Dataset's select, over grpo's bundled questions."""

    def select(self, indices):
        return Rows(self[i] for i in indices)


def bundled_questions(*a, **k):
    with open(os.path.join(GRPO_ENV, "wikisearch", "wikidata", "questions.jsonl"), encoding="utf-8") as f:
        return Rows(json.loads(line) for line in f if line.strip())


module("datasets", load_dataset=bundled_questions)
v1.Judges = list
wiki_taskset = load("wiki_search.taskset", f"{WS}/taskset.py")


def bundled_pages():
    """grpo's bundled corpus as the toolset's pages: NAME.md is page NAME."""
    pages = {}
    folder = os.path.join(GRPO_ENV, "wikisearch", "wikidata", "pages")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".md"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                pages[name[:-3]] = {"title": "", "content": f.read()}
    return pages


def mcp_reply(tool, fn, **arguments):
    """What the null harness puts in the tool message: FastMCP 1.28.1's
    _convert_to_content of the result (a raised error as its ToolError
    text), text blocks joined with "\n"."""
    import pydantic_core
    try:
        result = fn(**arguments)
    except Exception as e:  # noqa: BLE001 - FastMCP catches every error
        return f"Error executing tool {tool}: {e}"
    items = result if isinstance(result, (list, tuple)) else [result]
    blocks = [i if isinstance(i, str) else pydantic_core.to_json(i, fallback=str, indent=2).decode() for i in items]
    return "\n".join(blocks) if blocks else str(blocks)


class WikiTrace:
    """The trace the judge reads: last_reply as Trace.last_reply."""

    def __init__(self, completion):
        replies = [m for m in completion if m["role"] == "assistant"]
        self.last_reply = (replies[-1]["content"] or "").strip() if replies else ""
        self.transcript, self.info, self.extra_usage = "", {}, []

    def record_judge(self, response):
        pass


def wiki_rows():
    toolset = wiki_tools.WikiSearchToolset()
    toolset.pages = bundled_pages()
    rows = []
    for c in WIKI_TOOL_CASES:
        fn = getattr(toolset, c["tool"])
        rows.append(dict(env="wiki-search", version="v1", name=c["name"], kind="tool", tool="wiki_" + c["tool"],
                         arguments=c["arguments"], tool_reply=mcp_reply(c["tool"], fn, **c["arguments"]),
                         description=(fn.__doc__ or "").strip(),  # Toolset.register's
                         completion=[], source="ran"))
    tasks = wiki_taskset.WikiSearchTaskset(types.SimpleNamespace(task=None)).load()
    rows.append(dict(env="wiki-search", version="v1", name="the taskset's tasks", kind="tasks", completion=[],
                     tasks=[dict(prompt=t.data.prompt, system_prompt=getattr(t.data, "system_prompt", None), question=t.data.question,
                                 answer=t.data.answer) for t in tasks], source="ran"))
    judge = wiki_judge.WikiSearchJudge(wiki_judge.WikiSearchJudgeConfig())
    key = judge.reward_name
    for c in WIKI_CASES:
        JUDGE_REPLY[0], JUDGE_CALLS[:] = c["judge_reply"], []
        task = types.SimpleNamespace(question=c["question"], answer=c["answer"])
        completion = c["completion"]
        try:
            value = asyncio.run(judge.score(task, WikiTrace(completion)))
            error = None
        except ValueError as e:  # the judge gave no verdict: the rollout errors
            value, error = None, str(e)
        prompt = wiki_taskset.SYSTEM
        row = dict(env="wiki-search", version="v1", name=c["name"], kind="judge", args={"judge_base_url": "SCRIPTED", "judge_api_key_var": ""},
                   prompt=[{"role": "user", "content": f"{prompt}\n\nQuestion: {c['question']}"}],
                   completion=completion, answer=c["answer"], info={"question": c["question"]},
                   judge_reply=c["judge_reply"], judge_called=bool(JUDGE_CALLS),
                   judge_request=JUDGE_CALLS[0] if JUDGE_CALLS else None, source="ran")
        if error is None:
            row.update(reward=float(value) * judge.config.weight, metrics={key: float(value)})
        else:
            row.update(judge_error=error)
        rows.append(row)
    return rows


from verifiers_v1_games_cases import WIKI_CASES, WIKI_TOOL_CASES, WORDLE_CASES  # noqa: E402


def wordle_rows():
    tasks = wordle_tasks(40)
    rows = []
    for c in WORDLE_CASES:
        task = tasks[c["seed"]]
        it = play_wordle(task, c["turns"], c.get("max_turns"))
        reward, weight = it.trace.rewards["game_reward"]
        assert weight == 1.0
        row = dict(env="wordle", version="v1", name=c["name"],
                   prompt=[{"role": "system", "content": task.data.system_prompt},
                           {"role": "user", "content": task.data.prompt}],
                   completion=it.messages, answer=secret_of(task),
                   info={"game": "Wordle-v0", "seed": c["seed"]},
                   reward=reward, metrics={"game_reward": reward},
                   replayed=True, game_over="game_outcome" in it.trace.info, source="ran")
        if c.get("max_turns") is not None:
            row["args"] = {"max_turns": c["max_turns"]}
        rows.append(row)
    return rows


def main():
    for row in wordle_rows() + wiki_rows():
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
