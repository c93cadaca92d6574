"""A stand-in for verifiers (PrimeIntellect-ai/verifiers at a60a606: the v0
surface, verifiers.legacy, as `import verifiers as vf`) that implements
only what grpo's bridge calls, with the same names, signatures and
semantics, so the bridge's tests run on a bare python3: setup_state may
return a new State, cleanup(state) runs the @vf.cleanup handlers (one of
which renders the completion), rubrics score single rollouts or whole
groups (group reward functions), RubricGroup sums its rubrics. It is
written from verifiers' behaviour, not copied from it. verifiers.v1 is
the stand-in for the v1 taskset surface."""

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


GROUP_PARAMS = {"states", "prompts", "completions", "answers", "tasks", "infos"}


def _call_named(func, objects):
    params = inspect.signature(func).parameters
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        objects = {k: v for k, v in objects.items() if k in params}
    return func(**objects)


async def _maybe_await(x):
    return await x if inspect.isawaitable(x) else x


def _decorated(obj, attr):
    """Bound methods of obj marked with attr, by descending priority then name."""
    found = [m for _, m in inspect.getmembers(obj, predicate=inspect.ismethod) if hasattr(m, attr)]
    return sorted(found, key=lambda m: (-getattr(m, attr + "_priority", 0), m.__name__))


class Rubric:
    def __init__(self, funcs=None, weights=None, parser=None):
        self.funcs = list(funcs or [])
        self.weights = list(weights or [1.0] * len(self.funcs))
        self.class_objects = {"parser": parser}
        self._cleanup_handlers = _decorated(self, "cleanup")

    def add_reward_func(self, func, weight=1.0):
        self.funcs.append(func)
        self.weights.append(weight)

    def add_metric(self, func, weight=0.0):
        self.funcs.append(func)
        self.weights.append(weight)

    def _is_group_func(self, func):
        return bool(set(inspect.signature(func).parameters) & GROUP_PARAMS)

    @property
    def has_group_rewards(self):
        return any(self._is_group_func(f) for f in self.funcs)

    def _objects(self, state):
        return dict(prompt=state["prompt"], completion=state["completion"], answer=state.get("answer", ""),
                    state=state, task=state["task"], info=state.get("info", {}), **self.class_objects)

    async def _call(self, func, state):
        try:
            return float(await _maybe_await(_call_named(func, self._objects(state))))
        except Exception:
            return 0.0

    async def _call_group(self, func, states):
        objects = dict(prompts=[s["prompt"] for s in states], completions=[s["completion"] for s in states],
                       answers=[s.get("answer", "") for s in states], states=states,
                       tasks=[s["task"] for s in states], infos=[s.get("info", {}) for s in states],
                       **self.class_objects)
        try:
            return [float(x) for x in await _maybe_await(_call_named(func, objects))]
        except Exception:
            return [0.0] * len(states)

    async def score_rollout(self, state):
        assert self.funcs and not self.has_group_rewards, \
            "Rubric.score_rollout requires individual-level reward functions and no group-level ones"
        scores = [await self._call(f, state) for f in self.funcs]
        state["metrics"] = {f.__name__: s for f, s in zip(self.funcs, scores)}
        state["reward"] = sum(s * w for s, w in zip(scores, self.weights))

    async def score_group(self, states):
        rewards = [0.0] * len(states)
        metrics = {}
        for func, weight in zip(self.funcs, self.weights):
            if self._is_group_func(func):
                scores = await self._call_group(func, states)
            else:
                scores = [await self._call(func, s) for s in states]
            metrics[func.__name__] = scores
            for i, s in enumerate(scores):
                rewards[i] += s * weight
        avg = sum(rewards) / len(states)
        for i, state in enumerate(states):
            state["reward"] = rewards[i]
            state["advantage"] = rewards[i] - avg
            state["metrics"] = {k: v[i] for k, v in metrics.items()}

    async def cleanup(self, state):
        for h in self._cleanup_handlers:
            await _maybe_await(_call_named(h, {"state": state}))


class RubricGroup(Rubric):
    """Rubrics scored one after another: the reward is their sum, each
    metric the sum of its values across them."""

    def __init__(self, rubrics, **kwargs):
        if not rubrics:
            raise ValueError("RubricGroup must have at least one rubric")
        super().__init__(**kwargs)
        self.rubrics = rubrics

    @property
    def has_group_rewards(self):
        return any(r.has_group_rewards for r in self.rubrics)

    async def score_rollout(self, state):
        await self.score_group([state], single=True)

    async def score_group(self, states, single=False):
        rewards = [0.0] * len(states)
        metrics = [{} for _ in states]
        for r in self.rubrics:
            if single:
                await r.score_rollout(states[0])
            else:
                await r.score_group(states)
            for i, s in enumerate(states):
                rewards[i] += s.get("reward") or 0.0
                for k, v in (s.get("metrics") or {}).items():
                    metrics[i][k] = metrics[i].get(k, 0.0) + v
        for i, s in enumerate(states):
            s["reward"], s["metrics"] = rewards[i], metrics[i]

    async def cleanup(self, state):
        await super().cleanup(state)
        for r in self.rubrics:
            await r.cleanup(state)


def _marker(attr):
    def mark(func=None, priority=0):
        def set_(f):
            setattr(f, attr, True)
            setattr(f, attr + "_priority", priority)
            return f

        return set_(func) if func is not None else set_

    return mark


stop = _marker("stop")
cleanup = _marker("cleanup")


class Environment(ABC):
    def __init__(self, dataset=None, eval_dataset=None, system_prompt=None, rubric=None, env_id=None, **kwargs):
        self.system_prompt = system_prompt
        self.env_id = env_id
        self.rubric = rubric or Rubric()
        self.dataset = self._format(dataset)
        self.eval_dataset = self._format(eval_dataset)
        self._cleanup_handlers = _decorated(self, "cleanup")

    def add_rubric(self, rubric):
        if isinstance(self.rubric, RubricGroup):
            self.rubric.rubrics.append(rubric)
        else:
            self.rubric = RubricGroup(rubrics=[self.rubric, rubric])

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

    async def cleanup(self, state, task=None, resources=None):
        """Ends a rollout: runs the @vf.cleanup handlers, the highest
        priority first (MultiTurnEnv's render_state renders the completion)."""
        for h in self._cleanup_handlers:
            await _maybe_await(_call_named(h, {"state": state, "task": task, "env": self, "resources": resources}))


class MultiTurnMonitorRubric(Rubric):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.add_metric(self.num_turns)

    async def num_turns(self, state):
        return len(state["trajectory"])


class MultiTurnEnv(Environment):
    def __init__(self, max_turns=-1, **kwargs):
        super().__init__(**kwargs)
        self.max_turns = max_turns
        self.add_rubric(MultiTurnMonitorRubric())

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
        """Override to add fields; may return a new State (None keeps it)."""
        return state

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

    @cleanup(priority=100)
    async def render_state(self, state):
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
