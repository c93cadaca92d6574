"""A stand-in for verifiers.v1 (PrimeIntellect-ai/verifiers at a60a606)
with the names and shapes grpo's bridge uses, so its tests run on a bare
python3 (no pydantic): TasksetConfig/TaskData models, Taskset (load, its
iteration applying the config's system prompt, INFINITE, task_type,
toolsets), Task (data, @reward/@metric/@stop hooks, score(trace)), Trace
(message nodes, rewards, metrics), the Harness/Env/SingleAgentEnv bases
and the message types. It is written from verifiers' behaviour, not
copied from it."""

import inspect
import itertools
from abc import ABC, abstractmethod
from typing import Generic, TypeVar


class Model:
    """pydantic's BaseModel as the bridge uses it: fields from annotations
    with class defaults; model_validate refuses unknown fields (as v1's
    configs do); model_construct skips the check."""

    def __init__(self, **values):
        fields = self.model_fields()
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise ValueError("%s: %s: Extra inputs are not permitted" % (type(self).__name__, ", ".join(unknown)))
        for name in fields:
            if name in values:
                setattr(self, name, values[name])
            elif not hasattr(type(self), name):
                raise ValueError("%s: field %s: Field required" % (type(self).__name__, name))
            else:
                default = getattr(type(self), name)
                setattr(self, name, default() if isinstance(default, type) else default)

    @classmethod
    def model_fields(cls):
        out = {}
        for klass in reversed(cls.__mro__):
            out.update(getattr(klass, "__annotations__", {}))
        return out

    @classmethod
    def model_validate(cls, data):
        return data if isinstance(data, cls) else cls(**dict(data))

    @classmethod
    def model_construct(cls, **values):
        obj = cls.__new__(cls)
        for name in cls.model_fields():
            if not hasattr(type(obj), name) or name in values:
                continue
            default = getattr(type(obj), name)
            setattr(obj, name, default() if isinstance(default, type) else default)
        obj.__dict__.update(values)
        return obj

    def model_dump(self, exclude_none=False, **kwargs):
        out = {}
        for name in self.model_fields():
            v = getattr(self, name, None)
            if isinstance(v, Model):
                v = v.model_dump(exclude_none=exclude_none)
            if v is None and exclude_none:
                continue
            out[name] = v
        return out


from .types import AssistantMessage, SystemMessage, ToolMessage, UserMessage  # noqa: E402


class TaskConfig(Model):
    pass


class TasksetConfig(Model):
    id: str = ""
    task: TaskConfig = TaskConfig
    system_prompt: str = None


class TaskData(Model):
    idx: int = None
    name: str = None
    prompt: object = None
    system_prompt: str = None


def _mark(attr, **tags):
    def deco(func=None, **kw):
        def set_(f):
            setattr(f, attr, True)
            setattr(f, attr + "_priority", kw.get("priority", 0))
            if attr == "reward":
                f._vf_weight = kw.get("weight", 1.0)
            return f

        return set_(func) if func is not None else set_

    return deco


reward = _mark("reward")
metric = _mark("metric")
stop = _mark("stop")

DataT = TypeVar("DataT", bound=TaskData)


async def _invoke(fn, available):
    params = inspect.signature(fn).parameters
    out = fn(**{k: v for k, v in available.items() if k in params})
    return await out if inspect.isawaitable(out) else out


class Task(Generic[DataT]):
    def __init__(self, data, config=None):
        self.data = data
        self.config = config if config is not None else TaskConfig()

    def with_system_prompt(self, system_prompt):
        clone = type(self)(self.data, self.config)
        clone.data = type(self.data).model_construct(**{**self.data.__dict__, "system_prompt": system_prompt})
        return clone

    def hooks(self, attr):
        fns = [getattr(self, n) for n in dir(type(self)) if hasattr(getattr(type(self), n), attr)]
        return sorted(fns, key=lambda f: (-getattr(f, attr + "_priority", 0), f.__name__))

    async def score(self, trace, runtime=None):
        available = {"task": self.data, "trace": trace}
        for fn in self.hooks("metric"):
            trace.record_metric(fn.__name__, await _invoke(fn, available))
        for fn in self.hooks("reward"):
            trace.record_reward(fn.__name__, await _invoke(fn, available), getattr(fn, "_vf_weight", 1.0))

    @classmethod
    def toolsets(cls, config):
        return []


TaskT = TypeVar("TaskT", bound=Task)
ConfigT = TypeVar("ConfigT", bound=TasksetConfig)


class Taskset(ABC, Generic[TaskT, ConfigT]):
    INFINITE = False

    def __init__(self, config):
        self.config = config
        self.system_prompt = config.system_prompt

    @abstractmethod
    def load(self): ...

    def __iter__(self):
        for task in self.load():
            yield task.with_system_prompt(self.system_prompt) if self.system_prompt is not None else task

    def head(self, n):
        return list(itertools.islice(iter(self), n))

    @classmethod
    def task_type(cls):
        for base in getattr(cls, "__orig_bases__", ()):
            for a in getattr(base, "__args__", ()):
                if isinstance(a, type) and issubclass(a, Task):
                    return a
        return Task

    @classmethod
    def toolsets(cls, config):
        return []


class HarnessConfig(Model):
    id: str = ""


class Harness(ABC):
    """v1's Harness as grpo's bridge drives it: setup(runtime), then
    launch(ctx, trace, runtime, endpoint, secret, mcp_urls, data) runs the
    program, whose model calls go to endpoint, and returns its
    ProgramResult."""

    def __init__(self, config):
        self.config = config

    async def setup(self, runtime):
        pass

    @abstractmethod
    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data): ...


class Env:
    def __init__(self, config):
        self.config = config

    async def run(self, task, agents):
        raise NotImplementedError


class SingleAgentEnv(Env):
    async def run(self, task, agents):
        await agents.agent.run(task)


from .graph import MessageNode  # noqa: E402
from .trace import Trace  # noqa: E402
