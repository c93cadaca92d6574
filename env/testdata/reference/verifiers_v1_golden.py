#!/usr/bin/env python3
"""Regenerates env/testdata/verifiers_v1_golden.jsonl (rewards) and
env/testdata/verifiers_v1_tasks.jsonl (task streams) by running the v1
tasksets of verifiers a60a606 (2026-08-21) themselves:
environments/{gsm8k,reverse_text,alphabet_sort}/*/taskset.py, gsm8k's
verify.py (run as a program, as its uv script is) and
verifiers/v1/utils/decorators.py (which finds a task's @vf.reward
methods), with math-verify 0.8.0 (5d148cf) over latex2sympy2_extended
1.10.2 (0873506), the pair grpo's rubric.MathVerify follows.
a60a606's uv.lock resolves math-verify 0.9.0 over latex2sympy2_extended
1.11.0; math-verify 0.9.0's source was not to be had offline when this
was run, and with latex2sympy2_extended 1.11.0 (02999f5) under 0.8.0
every case gave the same values.

Nothing is pip-installed: the rest of verifiers.v1 (Task, Taskset,
Trace, Runtime, configs) and the datasets package are replaced by the
small stubs below, which keep only what these tasksets touch: a trace's
assistant messages and last_reply (the last one's content, stripped), a
runtime that runs a uv script with python3, and load_dataset returning
the rows given here. sympy and antlr4-python3-runtime 4.13.2 must be
importable; latex2sympy2_extended's ANTLR parser is generated once with
the jar its repository ships:

    cd $L2S/src/latex2sympy2_extended &&
    java -jar ../../antlr-4.13.2-complete.jar -Dlanguage=Python3 PS.g4 -o gen/antlr4_13_2 &&
    touch gen/__init__.py gen/antlr4_13_2/__init__.py

Usage (each variable names the root of a checkout at the commit above):

    VERIFIERS=... MATH_VERIFY=... LATEX2SYMPY=... \\
        python3 verifiers_v1_golden.py > ../verifiers_v1_golden.jsonl
    VERIFIERS=... MATH_VERIFY=... LATEX2SYMPY=... \\
        python3 verifiers_v1_golden.py tasks > ../verifiers_v1_tasks.jsonl

Every reward case is a dict in golden_v1_cases.py; the script adds the
reward (the weighted sum), metrics (each @vf.reward method's value under
its name), "version": "v1" and "source": "ran". Every task-stream row
gives a taskset config, the dataset rows load_dataset returned, and the
first tasks the taskset's load() made of them.
"""

import asyncio
import importlib.util
import itertools
import json
import os
import subprocess
import sys
import tempfile
import types
from typing import ClassVar

import pydantic

VF = os.environ["VERIFIERS"]
MV = os.environ["MATH_VERIFY"]
L2S = os.environ["LATEX2SYMPY"]


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)
    return m


decorators = load("vf_decorators", f"{VF}/verifiers/v1/utils/decorators.py")


class Subscriptable:
    def __class_getitem__(cls, item):
        return cls


class TaskConfig(pydantic.BaseModel):
    pass


class TasksetConfig(pydantic.BaseModel):
    task: TaskConfig = TaskConfig()


class TaskData(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True)
    idx: int | None = None
    prompt: str | list | None = None
    system_prompt: str | None = None


class Task(Subscriptable):
    def __init__(self, data, config=None):
        self.data, self.config = data, config


class Taskset(Subscriptable):
    INFINITE: ClassVar[bool] = False

    def __init__(self, config):
        self.config = config


class Message:
    def __init__(self, content):
        self.content = content


class Trace:
    """What the tasksets read of verifiers.v1's Trace: the sampled assistant
    messages and last_reply, the last one's content stripped."""

    def __init__(self, completion):
        self.assistant_messages = [Message(m["content"]) for m in completion if m["role"] == "assistant"]

    @property
    def last_reply(self):
        msgs = self.assistant_messages
        return (msgs[-1].content or "").strip() if msgs else ""

    @property
    def num_turns(self):
        return len(self.assistant_messages)


class Runtime:
    """Runs a uv script with python3 and math-verify from the checkouts."""

    async def prepare_uv_script(self, script, env=None):
        return ["python3"]

    async def run_uv_script(self, script, args):
        with tempfile.NamedTemporaryFile("wb", suffix=".py", delete=False) as f:
            f.write(script)
        env = dict(os.environ, PYTHONPATH=f"{MV}/src:{L2S}/src")
        p = subprocess.run(["python3", f.name, *args], capture_output=True, text=True, env=env)
        os.unlink(f.name)
        return types.SimpleNamespace(exit_code=p.returncode, stdout=p.stdout, stderr=p.stderr)


vf = types.ModuleType("verifiers.v1")
vf.TaskConfig, vf.TasksetConfig, vf.TaskData, vf.Task, vf.Taskset = TaskConfig, TasksetConfig, TaskData, Task, Taskset
vf.Trace, vf.Runtime, vf.State, vf.SingleAgentEnv = Trace, Runtime, dict, Subscriptable
vf.reward, vf.stop, vf.metric = decorators.reward, decorators.stop, decorators.metric
sys.modules["verifiers"] = types.ModuleType("verifiers")
sys.modules["verifiers"].v1 = vf
sys.modules["verifiers.v1"] = vf
DATA = {}  # (name, config, split) -> rows: what load_dataset returns
datasets = types.ModuleType("datasets")
datasets.load_dataset = lambda name, config=None, split=None: DATA[(name, config, split)]
sys.modules["datasets"] = datasets

MODULES = {
    "gsm8k": load("gsm8k_taskset", f"{VF}/environments/gsm8k/gsm8k/taskset.py"),
    "reverse-text": load("reverse_text_taskset", f"{VF}/environments/reverse_text/reverse_text/taskset.py"),
    "alphabet-sort": load("alphabet_sort_taskset", f"{VF}/environments/alphabet_sort/alphabet_sort/taskset.py"),
}
TASKS = {"gsm8k": "GSM8KTask", "reverse-text": "ReverseTextTask", "alphabet-sort": "AlphabetSortTask"}
DATAS = {"gsm8k": "GSM8KData", "reverse-text": "ReverseTextData", "alphabet-sort": "AlphabetSortTaskData"}
TASK_CONFIGS = {"alphabet-sort": "AlphabetSortTaskConfig"}


def score(c):
    """Task.score: every @vf.reward method, recorded under its name; the
    reward is their weighted sum (Trace.reward)."""
    m = MODULES[c["env"]]
    data = getattr(m, DATAS[c["env"]])(answer=c["answer"]) if "answer" in c else getattr(m, DATAS[c["env"]])(info=c["info"])
    config = getattr(m, TASK_CONFIGS.get(c["env"], "TaskConfig"), TaskConfig)(**c.get("args", {}))
    task = getattr(m, TASKS[c["env"]])(data, config)
    trace, metrics, reward = Trace(c["completion"]), {}, 0.0
    for fn in decorators.discover_decorated(task, "reward"):
        v = float(asyncio.run(decorators.invoke(fn, {"task": data, "trace": trace, "runtime": Runtime()})))
        metrics[fn.__name__] = v
        reward += v * fn._vf_weight
    return reward, metrics


# Task streams: small stand-ins for each taskset's hub dataset.
NAMES = [["Vladimir Drinfeld", "Maxim Kontsevich", "Vladimir Drinfeld", "Ana Lopez", "Jose Alvarez", "Emmy Noether",
          "Sophie Germain", "Kurt Godel", "Alan Turing", "Ada Lovelace", "Paul Erdos", "Terence Tao", "Emil Artin",
          "Hermann Weyl", "Felix Klein", "John Nash"],
         ["Only One"],
         ["José Álvarez", "Émile Zola", "Ángela Özil", "Zoe Adams", "Yusuf Brown", "Xu Chen", "Wei Dang"],
         ["Grace Hopper", "Alan Kay", "Barbara Liskov", "Donald Knuth", "Edsger Dijkstra", "Frances Allen", "Ken Thompson",
          "Dennis Ritchie", "Niklaus Wirth", "John Backus", "Tony Hoare", "Robin Milner"]]
STREAMS = [
    dict(env="alphabet-sort", config={}, dataset=["kalomaze/alphabetic-arxiv-authors-it1", None, "train"],
         rows=[{"names": n} for n in NAMES], take=12),
    dict(env="alphabet-sort", config={"min_turns": 2, "max_turns": 4, "min_names_per_turn": 2, "max_names_per_turn": 3},
         dataset=["kalomaze/alphabetic-arxiv-authors-it1", None, "train"], rows=[{"names": n} for n in NAMES], take=8),
    dict(env="reverse-text", config={}, dataset=["PrimeIntellect/Reverse-Text-RL", None, "train"],
         rows=[{"prompt": p} for p in ["Hello world.", "ätöü 🙂", "  spaced  "]], take=3),
    dict(env="gsm8k", config={}, dataset=["openai/gsm8k", "main", "test"],
         rows=[{"question": "What is 3 + 15?", "answer": "3 + 15 = 18\n#### 18"},
               {"question": "A big one?", "answer": "lots\n#### 1,000 "},
               {"question": "Two marks?", "answer": "#### 1 #### 2"},
               {"question": "No mark?", "answer": " 42 "}], take=4),
]
CONFIGS = {"gsm8k": "GSM8KConfig", "reverse-text": "ReverseTextConfig", "alphabet-sort": "AlphabetSortConfig"}
TASKSETS = {"gsm8k": "GSM8KTaskset", "reverse-text": "ReverseTextTaskset", "alphabet-sort": "AlphabetSortTaskset"}


def stream(s):
    m = MODULES[s["env"]]
    DATA[tuple(s["dataset"])] = s["rows"]
    ts = getattr(m, TASKSETS[s["env"]])(getattr(m, CONFIGS[s["env"]])(**s["config"]))
    tasks = []
    for t in itertools.islice(ts.load(), s["take"]):
        d = t.data.model_dump(exclude_none=True)
        tasks.append({k: d[k] for k in ("idx", "prompt", "system_prompt", "answer", "info") if k in d})
    return dict(s, tasks=tasks, source="ran")


def main():
    if sys.argv[1:] == ["tasks"]:
        for s in STREAMS:
            print(json.dumps(stream(s), ensure_ascii=False))
        return
    from golden_v1_cases import CASES

    for c in CASES:
        c = dict(c)
        reward, metrics = score(c)
        c.update(version="v1", reward=reward, metrics=metrics, source="ran")
        print(json.dumps(c, ensure_ascii=False))


if __name__ == "__main__":
    main()
