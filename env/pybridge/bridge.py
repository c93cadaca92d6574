# grpo's bridge to a verifiers environment. grpo runs this script in the
# user's own python (python -c) and speaks to it in one JSON object per line:
# requests on stdin, responses on the protocol stream (the original stdout).
# Everything the environment prints goes to stderr, which grpo logs.
#
# grpo samples the model; this script plays the environment's side of
# verifiers' MultiTurnEnv.rollout loop (init_state, setup_state, then per
# model turn: add_trajectory_step, is_completed, env_response) and scores
# with the environment's rubric (_finalize_rollout, score_rollout), keeping
# each episode's verifiers State here, keyed by grpo's episode id.
import asyncio
import json
import os
import sys
import threading
import traceback

PROTOCOL = 1


def watch_lifeline():
    """Forks a watchdog that kills this process group when grpo is gone.

    grpo starts this script in a process group of its own and kills the
    group when the script exits; the kernel kills the script itself
    (parent-death signal) when grpo dies. What the environment started
    would outlive a grpo killed by SIGKILL, so a watchdog, forked here
    before any environment code or thread exists, waits on the lifeline: a
    pipe whose only write end grpo holds, which reads EOF once grpo exits
    in any way. It holds none of the protocol's pipes."""
    fd = int(os.environ.pop("GRPO_BRIDGE_LIFELINE", "-1"))
    if fd < 0:
        return
    if os.fork() == 0:
        try:
            null = os.open(os.devnull, os.O_RDWR)
            for std in (0, 1, 2):
                os.dup2(null, std)
            os.closerange(3, fd)
            os.closerange(fd + 1, 1 << 16)
            while os.read(fd, 4096):
                pass
        finally:
            os.killpg(0, 9)
    os.close(fd)


watch_lifeline()

# The protocol stream is a private copy of fd 1; fd 1 itself (and so print()
# and C extensions writing to it) is pointed at stderr, so nothing the
# environment writes can corrupt the stream.
_proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr
_write_lock = threading.Lock()


def send(obj):
    line = json.dumps(obj, ensure_ascii=False, allow_nan=False, default=str)
    with _write_lock:
        _proto.write(line + "\n")
        _proto.flush()


class Fail(Exception):
    """An error to report to grpo as it is, with a kind grpo can act on."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def one_line(s):
    return " ".join(str(s).split())[:500]


def jsonable(x):
    """A JSON-encodable copy of x: pydantic models and datasets' values
    become plain dicts, lists and scalars; anything else its str()."""
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x if x == x and abs(x) != float("inf") else None
    if hasattr(x, "model_dump"):
        return jsonable(x.model_dump(exclude_none=True))
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if hasattr(x, "tolist"):  # numpy arrays and scalars from parquet rows
        return jsonable(x.tolist())
    return str(x)


def text_of(content):
    """grpo's messages hold text: multimodal parts keep their text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def message_out(m):
    d = jsonable(m)
    if isinstance(d, str):
        d = {"role": "user", "content": d}
    if not isinstance(d, dict) or "role" not in d:
        raise Fail("env", "the environment returned a message that is not a chat message: %r" % (d,))
    out = {"role": d["role"], "content": text_of(d.get("content"))}
    for k in ("reasoning_content", "name", "tool_call_id"):
        if d.get(k) is not None:
            out[k] = d[k]
    if d.get("tool_calls"):
        out["tool_calls"] = [tool_call_out(c) for c in d["tool_calls"]]
    return out


def tool_call_out(c):
    """verifiers' ToolCall is {id, name, arguments}; grpo's is OpenAI's."""
    if isinstance(c, dict) and "function" not in c and "name" in c:
        return {"type": "function", "function": {"name": c["name"], "arguments": c.get("arguments", "{}")}}
    return c


def messages_out(ms):
    if ms is None:
        return []
    if isinstance(ms, str):
        ms = [ms]
    return [message_out(m) for m in ms]


class Bridge:
    def __init__(self, vf, env, env_id):
        self.vf = vf
        self.env = env
        self.env_id = env_id
        self.states = {}
        self.datasets = {}
        self.client = grpo_client(vf)
        try:
            from verifiers.utils.message_utils import normalize_messages
        except ImportError:
            normalize_messages = None
        self.normalize = normalize_messages

    def messages_in(self, ms):
        """Messages from grpo, in the form the environment's code gets from
        verifiers itself (its Message types, where this verifiers has them)."""
        ms = [dict(m) for m in ms]
        return self.normalize(ms, field_name="messages") if self.normalize else ms

    def dataset(self, split):
        if split in self.datasets:
            return self.datasets[split]
        env = self.env
        if split == "train":
            ds = env.get_dataset()
        elif split == "eval":
            # get_eval_dataset falls back to the train split; grpo wants to
            # know that there is none.
            built = env.build_eval_dataset() if hasattr(env, "build_eval_dataset") else getattr(env, "eval_dataset", None)
            if built is None:
                raise Fail("no_split", "the environment has no eval dataset")
            ds = env.get_eval_dataset()
        else:
            raise Fail("protocol", "unknown split %r" % (split,))
        self.datasets[split] = ds
        return ds

    def row_out(self, row):
        info = row.get("info") or {}
        if isinstance(info, str):
            info = json.loads(info) if info.strip() else {}
        prompt = row.get("prompt")
        if isinstance(prompt, str):
            prompt = [{"role": "user", "content": prompt}]
        return {
            "example_id": jsonable(row.get("example_id")),
            "prompt": messages_out(prompt),
            "answer": jsonable(row.get("answer", "")),
            "info": jsonable(info),
            "task": jsonable(row.get("task")),
        }

    async def hello(self):
        env, vf = self.env, self.vf
        sizes = {"train": len(self.dataset("train"))}
        try:
            sizes["eval"] = len(self.dataset("eval"))
        except Fail as e:
            if e.kind != "no_split":
                raise
        multi = hasattr(vf, "MultiTurnEnv") and isinstance(env, vf.MultiTurnEnv)
        return {
            "protocol": PROTOCOL,
            "env_id": self.env_id,
            "env_class": type(env).__name__,
            "verifiers_version": getattr(vf, "__version__", ""),
            "python": sys.version.split()[0],
            "multi_turn": multi,
            "max_turns": int(getattr(env, "max_turns", 1) or 1),
            "system_prompt": getattr(env, "system_prompt", None) or "",
            "splits": sizes,
        }

    async def rows(self, req):
        ds = self.dataset(req.get("split", "train"))
        n = len(ds)
        lo = max(0, int(req.get("offset", 0)))
        hi = min(n, lo + max(0, int(req.get("limit", n))))
        if hasattr(ds, "select") and hasattr(ds, "to_list"):
            rows = ds.select(range(lo, hi)).to_list() if hi > lo else []
        else:
            rows = [ds[i] for i in range(lo, hi)]
        return {"total": n, "rows": [self.row_out(r) for r in rows]}

    async def new_state(self, inp):
        """A fresh verifiers State for a row, as rollout() starts one."""
        row = {
            "prompt": inp.get("prompt") or [],
            "answer": inp.get("answer", ""),
            "info": inp.get("info") or {},
        }
        if inp.get("task"):
            row["task"] = inp["task"]
        if inp.get("example_id") is not None:
            row["example_id"] = inp["example_id"]
        state = await self.env.init_state(row, self.client, "grpo", None)
        if hasattr(self.env, "setup_state"):
            try:
                await self.env.setup_state(state)
            except self.vf.Error as e:
                state["error"] = e
        return state

    async def add_turn(self, state, before, assistant):
        """Record one model turn as verifiers' add_model_response would, from
        grpo's decoded text instead of a client's response."""
        step = {
            "prompt": before,
            "completion": [assistant],
            "response": None,
            "tokens": None,
            "reward": None,
            "advantage": None,
            "is_truncated": False,
            "trajectory_id": state.get("trajectory_id"),
            "extras": {},
        }
        await self.env.add_trajectory_step(state, step)

    async def reply(self, req):
        ep = req["episode"]
        state = self.states.get(ep)
        if state is None:
            if req.get("input") is None:
                raise Fail("unknown_episode", "episode %s is unknown here (the python child restarted?)" % ep)
            state = await self.new_state(req["input"])
            self.states[ep] = state
        try:
            return await self.turn(state, self.messages_in(req["messages"]))
        except BaseException:
            self.states.pop(ep, None)
            raise

    async def turn(self, state, msgs):
        if not msgs or msg_role(msgs[-1]) != "assistant":
            raise Fail("protocol", "reply needs the conversation ending with the assistant's turn")
        env = self.env
        await self.add_turn(state, msgs[:-1], msgs[-1])
        if await env.is_completed(state):
            return {"messages": [], "done": True, "stop": state.get("stop_condition")}
        try:
            out = await env.env_response(msgs, state)
        except self.vf.Error as e:
            # verifiers ends the rollout on its own error type, and scores it.
            state["error"] = e
            await env.is_completed(state)
            return {"messages": [], "done": True, "stop": state.get("stop_condition")}
        final = state.get("final_env_response")
        if final is not None:
            await env.is_completed(state)
            return {"messages": messages_out(final), "done": True, "stop": state.get("stop_condition")}
        return {"messages": messages_out(out), "done": False, "stop": None}

    async def score(self, req):
        state = self.states.pop(req.get("episode"), None) if req.get("episode") else None
        completion = self.messages_in(req.get("completion") or [])
        if state is None:
            # A rollout played elsewhere (or before a restart): rebuild the
            # state from its row and replay the model turns into it.
            state = await self.new_state(req.get("input") or {})
            prompt = list(state["prompt"])
            for i, m in enumerate(completion):
                if msg_role(m) == "assistant":
                    await self.add_turn(state, prompt + completion[:i], m)
        env = self.env
        if hasattr(env, "_finalize_rollout"):
            await env._finalize_rollout(state)
        else:
            state["completion"] = completion
        await env.rubric.score_rollout(state)
        if hasattr(env.rubric, "cleanup"):
            await env.rubric.cleanup(state)
        metrics = {}
        for k, v in (state.get("metrics") or {}).items():
            try:
                metrics[str(k)] = float(v)
            except (TypeError, ValueError):
                pass
        return {"reward": float(state.get("reward") or 0.0), "metrics": metrics}

    async def drop(self, req):
        self.states.pop(req.get("episode"), None)
        return {}


def msg_role(m):
    return m.get("role") if isinstance(m, dict) else getattr(m, "role", None)


def grpo_client(vf):
    """A verifiers Client that is never asked for a completion: grpo samples
    the model itself. init_state requires a client."""
    base = getattr(vf, "Client", None)
    if base is None:
        return None

    class GrpoClient(base):
        def setup_client(self, config):
            return None

        async def _not_here(self, *a, **k):
            raise vf.Error("grpo samples the model; the environment asked its client for a completion")

        to_native_tool = to_native_prompt = get_native_response = _not_here
        raise_from_native_response = from_native_response = _not_here

        async def close(self):
            return None

    return GrpoClient(None)


def load(req):
    try:
        import verifiers as vf
    except ImportError as e:
        raise Fail("missing_verifiers", "cannot import verifiers: %s" % one_line(e))
    module_dir = req.get("module_dir") or ""
    if module_dir:
        sys.path.insert(0, module_dir)
    env_id = req.get("module") or req["env_id"]
    try:
        env = vf.load_environment(env_id, **(req.get("args") or {}))
    except Exception as e:
        cause = e.__cause__ or e
        raise Fail("load", "%s (%s)" % (one_line(e), one_line("%s: %s" % (type(cause).__name__, cause))))
    return Bridge(vf, env, req["env_id"])


def fail_response(rid, e):
    if isinstance(e, Fail):
        return {"id": rid, "ok": False, "kind": e.kind, "error": one_line(e)}
    tb = traceback.extract_tb(e.__traceback__)
    where = ""
    if tb:
        f = tb[-1]
        where = " (at %s:%d in %s)" % (os.path.basename(f.filename), f.lineno, f.name)
    traceback.print_exc(file=sys.stderr)
    return {"id": rid, "ok": False, "kind": "env", "error": one_line("%s: %s%s" % (type(e).__name__, e, where))}


async def serve(first):
    """Handles requests concurrently on one event loop, as verifiers runs an
    environment's rollouts; responses carry their request's id."""
    loop = asyncio.get_running_loop()
    lines = asyncio.Queue()

    def read():
        for line in sys.stdin:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        loop.call_soon_threadsafe(lines.put_nowait, None)

    threading.Thread(target=read, daemon=True).start()
    bridge = None
    try:
        bridge = load(first)
        send({"id": first.get("id"), "ok": True, "result": await bridge.hello()})
    except BaseException as e:
        send(fail_response(first.get("id"), e))
        return 3
    ops = {"rows": bridge.rows, "reply": bridge.reply, "score": bridge.score, "drop": bridge.drop}
    tasks = set()

    async def handle(req):
        rid = req.get("id")
        try:
            op = ops.get(req.get("op"))
            if op is None:
                raise Fail("protocol", "unknown op %r" % (req.get("op"),))
            send({"id": rid, "ok": True, "result": await op(req)})
        except Exception as e:
            send(fail_response(rid, e))

    while True:
        line = await lines.get()
        if line is None:
            return 0  # grpo went away
        try:
            req = json.loads(line)
        except ValueError as e:
            send({"id": None, "ok": False, "kind": "protocol", "error": one_line("bad request line: %s" % e)})
            continue
        if req.get("op") == "close":
            await asyncio.gather(*tasks, return_exceptions=True)
            send({"id": req.get("id"), "ok": True, "result": {}})
            return 0
        t = asyncio.ensure_future(handle(req))
        tasks.add(t)
        t.add_done_callback(tasks.discard)


def main():
    first = json.loads(sys.stdin.readline() or "{}")
    if first.get("op") != "hello" or first.get("protocol") != PROTOCOL:
        send({"id": first.get("id"), "ok": False, "kind": "protocol",
              "error": "expected hello with protocol %d, got %s" % (PROTOCOL, one_line(json.dumps(first)[:200]))})
        return 2
    return asyncio.run(serve(first))


if __name__ == "__main__":
    sys.exit(main())
