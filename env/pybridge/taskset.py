# The bridge's side of a verifiers v1 taskset (verifiers.v1 at a60a606): a
# package exporting a Taskset subclass in __all__, whose tasks carry their
# data (TaskData: prompt, system_prompt, the task's own fields) and their
# scoring (@vf.reward / @vf.metric methods, @vf.stop conditions).
#
# The harness is the null harness, played here in-process: verifiers runs
# it as a program that sends the prompt to the model and stops at an
# answer without tool calls; grpo samples that answer itself. A package
# exporting an Env subclass (SingleAgentEnv with its own run(task,
# agents)) is multi-turn: its run drives the interaction, each
# interaction.turn(messages) sending messages to the model through grpo.
# A harness that runs an agent program (a package's own Harness, or one
# named by args harness = {id = ...}) makes the environment an agent
# environment: grpo runs this script once per rollout in harness mode
# (run_harness), which launches the harness's program with grpo's
# interception endpoint as its model; the program's calls become the
# rollout's turns. Scoring builds a Trace of the conversation and calls
# task.score(trace).

MAX_INFINITE_TASKS = 100000  # rows taken from an INFINITE taskset


def exported(module, base):
    """The subclass of base a module exports in __all__ (v1's plugin
    rule), or None; more than one is the package's error."""
    found = []
    for name in getattr(module, "__all__", None) or []:
        obj = getattr(module, name, None)
        if isinstance(obj, type) and issubclass(obj, base) and obj is not base:
            found.append(obj)
    if len(found) > 1:
        raise Fail("load", "module %s exports %d %s subclasses in __all__ (%s); export exactly one"
                   % (module.__name__, len(found), base.__name__, ", ".join(c.__name__ for c in found)))
    return found[0] if found else None


def v1_taskset_class(module):
    if module is None:
        return None
    try:
        from verifiers.v1 import Taskset
    except ImportError:
        return None  # a verifiers without v1: the module is a v0 one
    return exported(module, Taskset)


def named_harness(hid):
    """The Harness class verifiers has under hid (verifiers.v1.harnesses.<id>)."""
    import verifiers.v1 as vf1

    try:
        module = importlib.import_module("verifiers.v1.harnesses." + str(hid).replace("-", "_"))
    except ImportError as e:
        if not (getattr(e, "name", "") or "").startswith("verifiers"):
            missing_module(e)  # the harness is there but lacks a dependency
        raise Fail("load", "harness %r is not one this verifiers has (verifiers.v1.harnesses.%s: %s); give args "
                   "harness = \"null\" to have grpo play the null harness in-process" % (hid, hid, one_line(e)))
    for obj in vars(module).values():
        if isinstance(obj, type) and issubclass(obj, vf1.Harness) and obj is not vf1.Harness:
            return obj
    raise Fail("load", "verifiers.v1.harnesses.%s has no Harness subclass" % hid)


def harness_config(vf1, cls, args):
    """The harness's config (its HarnessConfig specialisation) from args."""
    ctype = None
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            for a in getattr(base, "__args__", ()):
                if isinstance(a, type) and issubclass(a, vf1.HarnessConfig):
                    ctype = ctype or a
    ctype = ctype or vf1.HarnessConfig
    try:
        return ctype.model_validate(args)
    except Exception as e:
        raise Fail("load", "harness args for %s: %s" % (ctype.__name__, one_line(e)))


def taskset_config(vf1, cls, env_id, args):
    """The taskset's config (its TasksetConfig specialisation) from args."""
    ctype = None
    try:
        from verifiers.v1.utils.generic import concrete_type

        ctype = concrete_type(cls, vf1.TasksetConfig, origin=vf1.Taskset)
    except ImportError:
        pass
    if ctype is None:
        for base in getattr(cls, "__orig_bases__", ()):
            for a in getattr(base, "__args__", ()):
                if isinstance(a, type) and issubclass(a, vf1.TasksetConfig):
                    ctype = a
    ctype = ctype or vf1.TasksetConfig
    data = dict(args)
    data.setdefault("id", env_id)
    try:
        return ctype.model_validate(data)
    except Exception as e:
        raise Fail("load", "args for %s: %s" % (ctype.__name__, one_line(e)))


def load_taskset(module, cls, env_id, args):
    import verifiers.v1 as vf1

    harness = args.pop("harness", None)
    hargs = dict(harness) if isinstance(harness, dict) else {"id": harness} if harness else {}
    hid = hargs.get("id")
    hcls = exported(module, vf1.Harness) if hid is None else None if hid == "null" else named_harness(hid)
    agent = (hcls, harness_config(vf1, hcls, hargs)) if hcls is not None else None
    config = taskset_config(vf1, cls, env_id, args)
    try:
        taskset = cls(config)
    except Exception as e:
        missing_module(e)
        raise Fail("load", "%s(config): %s: %s" % (cls.__name__, type(e).__name__, one_line(e)))
    task_cls = cls.task_type()
    if cls.toolsets(config) or task_cls.toolsets(getattr(config, "task", None)):
        raise Fail("load", "%s serves tools (toolsets: MCP servers), which grpo's bridge does not run yet" % cls.__name__)
    env_cls = exported(module, vf1.Env)
    if env_cls is not None and env_cls.run is vf1.SingleAgentEnv.run:
        env_cls = None  # the plain single-agent run: the null harness alone
    if agent is not None and env_cls is not None:
        raise Fail("load", "%s exports both an Env and an agent Harness; grpo runs one of them (give args harness = \"null\" for the Env)" % module.__name__)
    return TasksetBridge(vf1, taskset, env_cls, env_id, agent)


def call_named(fn, available):
    """Calls fn with the arguments it names (task, trace, ...), as v1's
    hooks are called."""
    params = inspect.signature(fn).parameters
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return fn(**available)
    return fn(**{k: v for k, v in available.items() if k in params})


class TasksetBridge:
    generation = "v1"

    def __init__(self, vf1, taskset, env_cls, env_id, agent=None):
        self.vf1 = vf1
        self.taskset = taskset
        self.env_cls = env_cls
        self.env_id = env_id
        self.agent = agent  # (Harness class, its config) for an agent harness
        self.tasks = None
        self.episodes = {}  # episode id -> V1Episode

    def all_tasks(self):
        if self.tasks is None:
            it = iter(self.taskset)
            if getattr(self.taskset, "INFINITE", False):
                print("grpo bridge: %s is infinite; grpo takes its first %d tasks"
                      % (type(self.taskset).__name__, MAX_INFINITE_TASKS), file=sys.stderr)
                it = itertools.islice(it, MAX_INFINITE_TASKS)
            self.tasks = list(it)
        return self.tasks

    async def hello(self):
        cls = self.env_cls or type(self.taskset)
        return {
            "env_class": cls.__name__,
            "multi_turn": self.env_cls is not None or self.agent is not None,
            # The program's calls are the turns (run_harness).
            "agent": self.agent is not None,
            # An Env's run decides its turns; MAX_TURNS where it says.
            "max_turns": int(getattr(self.env_cls, "MAX_TURNS", -1)) if self.env_cls else -1 if self.agent else 1,
            "system_prompt": self.taskset.system_prompt or "",
            "splits": {"train": len(self.all_tasks())},
            "group_rewards": False,
        }

    async def rows(self, req):
        if req.get("split", "train") != "train":
            raise Fail("no_split", "a v1 taskset has one split")
        tasks = self.all_tasks()
        lo = max(0, int(req.get("offset", 0)))
        hi = min(len(tasks), lo + max(0, int(req.get("limit", len(tasks)))))
        return {"total": len(tasks), "rows": [self.row_out(i, tasks[i]) for i in range(lo, hi)]}

    def row_out(self, i, task):
        data = task.data
        prompt = []
        if data.system_prompt:
            prompt.append({"role": "system", "content": data.system_prompt})
        if isinstance(data.prompt, str):
            prompt.append({"role": "user", "content": data.prompt})
        elif data.prompt:
            prompt += messages_out(data.prompt)
        info = jsonable(data)
        for k in ("prompt", "system_prompt"):
            info.pop(k, None)
        return {"example_id": i, "prompt": messages_out(prompt), "answer": jsonable(info.get("answer", "")),
                "info": info, "task": type(task).__name__}

    def task_of(self, inp):
        i = (inp or {}).get("example_id")
        tasks = self.all_tasks()
        if not isinstance(i, int) or not 0 <= i < len(tasks):
            raise Fail("protocol", "a v1 taskset scores only its own rows; example_id %r is not one of its %d tasks"
                       % (i, len(tasks)))
        return tasks[i]

    def trace(self, task, msgs, stop=None):
        """A v1 Trace of the conversation: one message node per message,
        each the parent of the next; the model's turns are sampled."""
        from verifiers.v1.graph import MessageNode
        from verifiers.v1.trace import Trace, TraceTask
        from verifiers.v1 import types as t

        kinds = {"system": t.SystemMessage, "user": t.UserMessage, "assistant": t.AssistantMessage, "tool": t.ToolMessage}
        nodes = []
        for i, m in enumerate(msgs):
            d = dict(m)
            if d.get("tool_calls"):
                d["tool_calls"] = [{"id": c.get("id", ""), "name": c["function"]["name"],
                                    "arguments": c["function"].get("arguments", "{}")} for c in d["tool_calls"]]
            d = {k: v for k, v in d.items() if v is not None}
            msg = kinds[d["role"]].model_validate(d)
            nodes.append(MessageNode.model_construct(parent=i - 1 if i else None, message=msg,
                                                     sampled=d["role"] == "assistant"))
        tt = TraceTask.model_construct(type=type(task).__name__, data=task.data)
        return Trace.model_construct(task=tt, nodes=nodes, rewards={}, metrics={}, info={}, errors=[],
                                     is_completed=stop is not None, ok=True, stop_condition=stop)

    async def stopped(self, task, msgs):
        """The first of the task's @vf.stop conditions that holds, or None."""
        trace = self.trace(task, msgs)
        for fn in task.hooks("stop"):
            out = call_named(fn, {"task": task.data, "trace": trace})
            if inspect.isawaitable(out):
                out = await out
            if out:
                return fn.__name__
        return None

    async def reply(self, req):
        ep_id = req["episode"]
        ep = self.episodes.get(ep_id)
        if ep is None:
            if req.get("input") is None:
                raise Fail("unknown_episode", "episode %s is unknown here (the python child restarted?)" % ep_id)
            ep = V1Episode(self, self.task_of(req["input"]))
            self.episodes[ep_id] = ep
        msgs = [dict(m) for m in req["messages"]]
        if not msgs or msgs[-1].get("role") != "assistant":
            raise Fail("protocol", "reply needs the conversation ending with the assistant's turn")
        try:
            out = await ep.turn(msgs)
        except BaseException:
            self.episodes.pop(ep_id, None)
            ep.cancel()
            raise
        if out["done"]:
            ep.cancel()
        return out

    async def score(self, req):
        ep = self.episodes.pop(req.get("episode"), None) if req.get("episode") else None
        if ep is not None:
            ep.cancel()
        task = ep.task if ep is not None else self.task_of(req.get("input"))
        prompt = self.row_out(0, task)["prompt"]
        msgs = prompt + [dict(m) for m in req.get("completion") or []]
        trace = self.trace(task, msgs, stop=(ep.stop if ep else None) or "completed")
        await task.score(trace)
        metrics = {}
        for k, v in list(trace.metrics.items()) + [(k, r.score if r is not None else None) for k, r in trace.rewards.items()]:
            if v is not None:
                metrics[str(k)] = float(v)
        return {"reward": float(trace.reward), "metrics": metrics}

    async def score_group(self, req):
        raise Fail("protocol", "a v1 taskset has no group rewards")

    async def drop(self, req):
        ep = self.episodes.pop(req.get("episode"), None)
        if ep is not None:
            ep.cancel()
        return {}


class V1Episode:
    """One play of a task. With an Env, its run(task, agents) runs as a
    task of its own, suspended in interaction.turn until grpo brings the
    model's next turn."""

    def __init__(self, bridge, task):
        self.bridge = bridge
        self.task = task
        self.stop = None
        self.run = None
        self.inbox = asyncio.Queue()  # the model's turns, None once stopped
        self.outbox = asyncio.Queue()  # ("turn", messages) | ("done", None) | ("error", exc)
        self.started = False
        self.over = False

    async def turn(self, msgs):
        self.stop = await self.bridge.stopped(self.task, msgs)
        if self.bridge.env_cls is None:
            # The null harness's program stops at an answer without tool
            # calls; there are no tools here.
            return {"messages": [], "done": True, "stop": self.stop or "no_tool_calls"}
        if self.run is None:
            env = self.bridge.env_cls.__new__(self.bridge.env_cls)  # see the docs: run() needs no config
            env.taskset = self.bridge.taskset
            self.run = asyncio.ensure_future(self.drive(env))
        if self.stop:
            self.over = True
        self.inbox.put_nowait(None if self.stop else msgs[-1])
        kind, value = await self.outbox.get()
        if kind == "turn" and not self.over:
            return {"messages": value, "done": False, "stop": None}
        if kind == "error":
            raise value
        return {"messages": [], "done": True, "stop": self.stop or "env_run_finished"}

    async def drive(self, env):
        try:
            await env.run(self.task, Agents(self))
            self.outbox.put_nowait(("done", None))
        except asyncio.CancelledError:
            raise
        except BaseException as e:
            self.outbox.put_nowait(("error", e))

    async def model_turn(self, message):
        """interaction.turn(message): the messages go to the model through
        grpo and the model's answer comes back as a Segment."""
        from verifiers.v1.agent import Segment

        if self.over:
            return Segment(messages=[], terminated=True)
        new = [] if message is None else [message] if isinstance(message, str) else list(message)
        if not self.started:
            self.started = True
            if new:
                raise Fail("env", "%s's run sends messages before the model's first turn; grpo needs them in the "
                           "task's prompt" % self.bridge.env_cls.__name__)
        elif not new:
            raise Fail("env", "interaction.turn() without messages after the first turn: the model would answer "
                       "an unchanged conversation")
        else:
            self.outbox.put_nowait(("turn", messages_out(new)))
        m = await self.inbox.get()
        if m is None:
            self.over = True
            return Segment(messages=[], terminated=True)
        from verifiers.v1 import types as t

        reply = {k: v for k, v in m.items() if k in ("role", "content", "reasoning_content")}
        return Segment(messages=[t.AssistantMessage.model_validate(reply)])

    def cancel(self):
        if self.run is not None and not self.run.done():
            self.run.cancel()


class Agents:
    """v1's Agents as an Env's run sees them: every seat is the one model
    grpo trains."""

    def __init__(self, episode):
        self._agent = Agent(episode)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self._agent


class Agent:
    def __init__(self, episode):
        self.episode = episode

    def interaction(self, task, **kwargs):
        return Interaction(self.episode)

    async def run(self, task, **kwargs):
        await self.episode.model_turn(None)


class Interaction:
    def __init__(self, episode):
        self.episode = episode

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False

    async def turn(self, message=None):
        return await self.episode.model_turn(message)


class LocalRuntime:
    """What a harness's launch runs its program in: a subprocess of this
    one, with the harness's env on top of this process's (which holds the
    rollout's OPENAI_BASE_URL). v1's runtime API as far as a local program
    needs it; a harness that needs more (uv scripts, files in a sandbox)
    fails with the missing attribute's name."""

    async def run(self, argv, env):
        proc = await asyncio.create_subprocess_exec(*argv, env={**os.environ, **(env or {})},
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        from verifiers.v1.runtimes import ProgramResult

        return ProgramResult(exit_code=proc.returncode, stdout=out.decode(errors="replace"),
                             stderr=err.decode(errors="replace"))

    run_program = run

    async def alive(self):
        return True

    def host_url(self, url):
        return url


async def run_harness(bridge, task_req):
    """One rollout of an agent harness (grpo runs this script with
    `harness` for each): the task named by the rollout's example id
    ("train-<i>"), the harness set up and launched with the rollout's
    interception endpoint as its model. The exit status is the program's."""
    if not isinstance(bridge, TasksetBridge) or bridge.agent is None:
        print("grpo bridge: %s has no agent harness" % getattr(bridge, "env_id", "?"), file=sys.stderr)
        return 2
    ident = str(task_req.get("id", ""))
    task = bridge.task_of({"example_id": int(ident.rsplit("-", 1)[-1]) if ident.rsplit("-", 1)[-1].isdigit() else None})
    cls, config = bridge.agent
    harness = cls(config)
    runtime = LocalRuntime()
    await harness.setup(runtime)
    ctx = types.SimpleNamespace(model=os.environ.get("OPENAI_MODEL", "grpo"))
    result = await harness.launch(ctx, bridge.trace(task, []), runtime, os.environ["OPENAI_BASE_URL"],
                                  os.environ.get("OPENAI_API_KEY", ""), {}, task.data)
    if result.exit_code != 0:
        print("harness %s: program exited %s: %s" % (cls.__name__, result.exit_code,
                                                     ((result.stderr or result.stdout) or "").strip()[-2000:]), file=sys.stderr)
    return result.exit_code or 0
