"""A stand-in for verifiers (PrimeIntellect-ai/verifiers at 8d4b33247) that
implements only what grpo's bridge calls, with the same names, signatures
and semantics, so the bridge's tests run on a bare python3. It is written
from verifiers' documented behaviour, not copied from it."""

import importlib
import inspect
import uuid
from abc import ABC, abstractmethod

__version__ = "0.0.stub"


class Error(Exception):
    """verifiers' own error type: a rollout that raises it ends, and is scored."""


class Client(ABC):
    def __init__(self, client_or_config):
        self._client = client_or_config

    @abstractmethod
    def setup_client(self, config): ...

    @abstractmethod
    async def to_native_tool(self, tool): ...

    @abstractmethod
    async def to_native_prompt(self, messages): ...

    @abstractmethod
    async def get_native_response(self, prompt, model, sampling_args, tools=None, **kwargs): ...

    @abstractmethod
    async def raise_from_native_response(self, response): ...

    @abstractmethod
    async def from_native_response(self, response): ...

    @abstractmethod
    async def close(self): ...


class State(dict):
    """A rollout's state; the row's fields live under "input" and are read
    and written through the state, as in verifiers."""

    INPUT_FIELDS = ["prompt", "answer", "task", "info", "example_id"]

    def __getitem__(self, key):
        if key in self.INPUT_FIELDS and "input" in self and key in dict.__getitem__(self, "input"):
            return dict.__getitem__(self, "input")[key]
        return dict.__getitem__(self, key)

    def __setitem__(self, key, value):
        if key in self.INPUT_FIELDS and "input" in self and key in dict.__getitem__(self, "input"):
            dict.__getitem__(self, "input")[key] = value
            return
        dict.__setitem__(self, key, value)

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default


class Rubric:
    def __init__(self, funcs=None, weights=None, parser=None):
        self.funcs = list(funcs or [])
        self.weights = list(weights or [1.0] * len(self.funcs))
        self.class_objects = {"parser": parser}

    def add_reward_func(self, func, weight=1.0):
        self.funcs.append(func)
        self.weights.append(weight)

    async def _call(self, func, state):
        merged = dict(prompt=state["prompt"], completion=state["completion"], answer=state.get("answer", ""),
                      state=state, task=state["task"], info=state.get("info", {}))
        merged.update(self.class_objects)
        params = inspect.signature(func).parameters
        if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
            merged = {k: v for k, v in merged.items() if k in params}
        try:
            out = func(**merged)
            if inspect.isawaitable(out):
                out = await out
            return float(out)
        except Exception:
            return 0.0

    async def score_rollout(self, state):
        scores = [await self._call(f, state) for f in self.funcs]
        state["metrics"] = {f.__name__: s for f, s in zip(self.funcs, scores)}
        state["reward"] = sum(s * w for s, w in zip(scores, self.weights))

    async def cleanup(self, state):
        pass


def stop(func):
    func.stop = True
    return func


class Environment(ABC):
    def __init__(self, dataset=None, eval_dataset=None, system_prompt=None, rubric=None, env_id=None, **kwargs):
        self.system_prompt = system_prompt
        self.env_id = env_id
        self.rubric = rubric or Rubric()
        self.dataset = self._format(dataset)
        self.eval_dataset = self._format(eval_dataset)

    def _format(self, rows):
        if rows is None:
            return None
        out = []
        for i, r in enumerate(rows):
            r = dict(r)
            r.setdefault("example_id", i)
            if "prompt" not in r:
                p = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
                r["prompt"] = p + [{"role": "user", "content": r.pop("question")}]
            r.setdefault("task", self.env_id or "default")
            out.append(r)
        return out

    def get_dataset(self, n=-1, seed=None):
        if self.dataset is None:
            raise ValueError("dataset is not set")
        return self.dataset[:n] if n > 0 else self.dataset

    def build_eval_dataset(self):
        return self.eval_dataset

    def get_eval_dataset(self, n=-1, seed=None):
        if self.eval_dataset is None:
            return self.get_dataset(n, seed)
        return self.eval_dataset[:n] if n > 0 else self.eval_dataset

    async def init_state(self, input, client, model, sampling_args=None):
        if not isinstance(client, Client):
            raise ValueError("Unsupported client type: %s" % type(client))
        state_input = dict(input)
        state_input.setdefault("task", self.env_id or "default")
        state = State(input=state_input)
        from verifiers.utils.message_utils import normalize_messages

        state["prompt"] = normalize_messages(input["prompt"])
        state.update(client=client, model=model, sampling_args=sampling_args, is_completed=False,
                     is_truncated=False, trajectory=[], completion=None, trajectory_id=uuid.uuid4().hex,
                     reward=None, metrics=None, error=None, final_env_response=None, timing={})
        return state

    def _stop_conditions(self):
        return [getattr(self, n) for n in dir(type(self)) if getattr(getattr(type(self), n), "stop", False)]

    async def is_completed(self, state, **kwargs):
        for cond in self._stop_conditions():
            if await cond(state):
                state["is_completed"] = True
                state["stop_condition"] = cond.__name__
                return True
        return False

    async def _cleanup(self, state):
        pass


class MultiTurnEnv(Environment):
    def __init__(self, max_turns=-1, **kwargs):
        super().__init__(**kwargs)
        self.max_turns = max_turns

    @abstractmethod
    async def env_response(self, messages, state, **kwargs): ...

    @stop
    async def has_error(self, state):
        return state.get("error") is not None

    @stop
    async def max_turns_reached(self, state):
        return self.max_turns > 0 and len(state["trajectory"]) >= self.max_turns

    @stop
    async def has_final_env_response(self, state):
        return state.get("final_env_response") is not None

    async def setup_state(self, state):
        pass

    async def add_trajectory_step(self, state, step):
        state["trajectory"].append(step)

    async def render_completion(self, state):
        if not state["trajectory"]:
            state["completion"] = []
            return
        last = state["trajectory"][-1]
        conv = list(last["prompt"]) + list(last["completion"])
        if state.get("final_env_response"):
            conv += list(state["final_env_response"])
        state["completion"] = conv[len(state["prompt"]):]

    async def _finalize_rollout(self, state):
        await self._cleanup(state)
        await self.render_completion(state)


class SingleTurnEnv(MultiTurnEnv):
    def __init__(self, **kwargs):
        super().__init__(max_turns=1, **kwargs)

    async def env_response(self, messages, state, **kwargs):
        raise NotImplementedError("env_response is not implemented for SingleTurnEnv")


def load_environment(env_id, **env_args):
    module_name = env_id.replace("-", "_").split("/")[-1]
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError("Could not import '%s' environment. Ensure the package for the '%s' environment is installed." % (env_id, env_id)) from e
    try:
        env = module.load_environment(**env_args)
    except Exception as e:
        raise RuntimeError("Failed to load environment '%s': %s" % (env_id, e)) from e
    env.env_id = env.env_id or env_id
    return env
