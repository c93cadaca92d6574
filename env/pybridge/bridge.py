# grpo's bridge to a verifiers environment. grpo runs this script in the
# environment's python (python -c) and speaks to it in one JSON object per
# line: requests on stdin, responses on the protocol stream (the original
# stdout). Everything the environment prints goes to stderr, which grpo
# logs.
#
# grpo samples the model; this script plays the environment's side and
# scores with its rubric, keeping each episode's state here, keyed by
# grpo's episode id. The script is three files joined: legacy.py (v0
# environments, load_environment), taskset.py (v1 tasksets) and this one
# (the protocol), which runs last.
import asyncio
import importlib
import inspect
import itertools
import json
import os
import sys
import threading
import traceback
import types

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

    def __init__(self, kind, message, missing=""):
        super().__init__(message)
        self.kind = kind
        self.missing = missing  # the module a missing_module failure lacks


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


def msg_role(m):
    return m.get("role") if isinstance(m, dict) else getattr(m, "role", None)


def missing_module(e, own=""):
    """Raises Fail("missing_module") when e, or an exception it was raised
    from, is an import of a module this python does not have: a dependency
    of the environment's package (own, the package itself, is not
    installed: load_environment says so as verifiers does)."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ModuleNotFoundError) and e.name and e.name.split(".")[0] != own:
            raise Fail("missing_module", "cannot import %s: %s" % (e.name, one_line(e)), missing=e.name.split(".")[0])
        e = e.__cause__ or e.__context__


def module_name(env_id):
    """The module verifiers imports for an id (its load_environment and
    v1's plugin loader agree): the last path part, '-' as '_'."""
    return env_id.split("/")[-1].split("@")[0].replace("-", "_")


def load(req):
    """Loads the environment: a module exporting a verifiers v1 Taskset
    subclass in __all__ is a v1 taskset; anything else goes to verifiers'
    load_environment (v0), which says what it lacks."""
    try:
        import verifiers as vf
    except ImportError as e:
        missing = getattr(e, "name", "") or ""
        if missing and missing.split(".")[0] != "verifiers":
            missing_module(e)  # verifiers itself lacks a dependency
        raise Fail("missing_verifiers", "cannot import verifiers: %s" % one_line(e))
    module_dir = req.get("module_dir") or ""
    if module_dir:
        sys.path.insert(0, module_dir)
    env_id = req.get("module") or req["env_id"]
    args = dict(req.get("args") or {})
    own = module_name(env_id)
    try:
        module = importlib.import_module(own)
    except Exception as e:
        missing_module(e, own)
        module = None  # load_environment reports it as verifiers does
    taskset = v1_taskset_class(module)
    if taskset is not None:
        return load_taskset(module, taskset, req["env_id"], args)
    return load_legacy(vf, env_id, own, args)


def verifiers_version():
    vf = sys.modules.get("verifiers")
    return str(getattr(vf, "__version__", "") or "")


def fail_response(rid, e):
    if isinstance(e, Fail):
        out = {"id": rid, "ok": False, "kind": e.kind, "error": one_line(e)}
        if e.missing:
            out["missing"] = e.missing
        return out
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
        hello = await bridge.hello()
        hello.update(protocol=PROTOCOL, env_id=first["env_id"], generation=bridge.generation,
                     verifiers_version=verifiers_version(), python=sys.version.split()[0])
        send({"id": first.get("id"), "ok": True, "result": hello})
    except BaseException as e:
        send(fail_response(first.get("id"), e))
        return 3
    ops = {"rows": bridge.rows, "reply": bridge.reply, "score": bridge.score,
           "score_group": bridge.score_group, "drop": bridge.drop}
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


def harness_main(req):
    """Harness mode (argv: harness HELLO-JSON): one rollout of an agent
    harness, the task on stdin as rollout gives it ({"id", "prompt"})."""
    task_req = json.loads(sys.stdin.readline() or "{}")
    try:
        bridge = load(req)
        return asyncio.run(run_harness(bridge, task_req))
    except Fail as e:
        print("grpo bridge: %s" % e, file=sys.stderr)
        return 2


def main():
    if sys.argv[1:2] == ["harness"]:
        return harness_main(json.loads(sys.argv[2]))
    first = json.loads(sys.stdin.readline() or "{}")
    if first.get("op") != "hello" or first.get("protocol") != PROTOCOL:
        send({"id": first.get("id"), "ok": False, "kind": "protocol",
              "error": "expected hello with protocol %d, got %s" % (PROTOCOL, one_line(json.dumps(first)[:200]))})
        return 2
    return asyncio.run(serve(first))


if __name__ == "__main__":
    sys.exit(main())
