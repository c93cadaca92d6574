# The bridge's side of a verifiers v0 environment (load_environment; since
# verifiers a60a606 the package verifiers.legacy, still importable as
# `import verifiers as vf`). It plays MultiTurnEnv.rollout's loop with
# grpo's sampler in place of the client, keeping each episode's State
# here, keyed by grpo's episode id:
#
#   - setup_state's return value is the State from then on (a60a606: it
#     may return a new one; None keeps the old);
#   - the environment's cleanup(state) runs once when the episode ends:
#     when it is done, scored, dropped or fails (8d4b33247's
#     _finalize_rollout where cleanup does not exist);
#   - a rubric with group reward functions (a parameter named states,
#     completions, ...) is scored with score_group over the episodes of one
#     group, as verifiers' run_group does; others with score_rollout.


class LegacyBridge:
    generation = "v0"

    def __init__(self, vf, env, env_id):
        self.vf = vf
        self.env = env
        self.env_id = env_id
        self.states = {}  # episode id -> State
        self.ended = set()  # episode ids whose cleanup ran
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

    def group_rewards(self):
        return bool(getattr(self.env.rubric, "has_group_rewards", False))

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
            "env_class": type(env).__name__,
            "multi_turn": multi,
            "max_turns": int(getattr(env, "max_turns", 1) or 1),
            "system_prompt": getattr(env, "system_prompt", None) or "",
            "splits": sizes,
            "group_rewards": self.group_rewards(),
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
        return {"total": n, "rows": [row_out(r) for r in rows]}

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
                out = await self.env.setup_state(state)
                if out is not None:
                    state = out
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

    async def end(self, ep, state):
        """Runs the environment's end-of-rollout work on an episode once."""
        if ep is not None and ep in self.ended:
            return
        if ep is not None:
            self.ended.add(ep)
        env = self.env
        if hasattr(env, "_finalize_rollout"):
            await env._finalize_rollout(state)
        elif hasattr(env, "cleanup"):
            await env.cleanup(state)
        if state.get("completion") is None:
            state["completion"] = []

    async def reply(self, req):
        ep = req["episode"]
        state = self.states.get(ep)
        if state is None:
            if req.get("input") is None:
                raise Fail("unknown_episode", "episode %s is unknown here (the python child restarted?)" % ep)
            state = await self.new_state(req["input"])
            self.states[ep] = state
        try:
            out = await self.turn(state, self.messages_in(req["messages"]))
        except BaseException:
            self.states.pop(ep, None)
            await self.end_quietly(ep, state)
            raise
        if out["done"]:
            await self.end(ep, state)
        return out

    async def end_quietly(self, ep, state):
        try:
            await self.end(ep, state)
        except Exception as e:
            print("grpo bridge: cleanup of episode %s failed: %s" % (ep, one_line(e)), file=sys.stderr)
        self.ended.discard(ep)

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

    async def played_state(self, ep, inp, completion):
        """The State of a finished episode, ended; a rollout played
        elsewhere (or before a restart) gets one rebuilt from its row, with
        its model turns replayed."""
        state = self.states.pop(ep, None) if ep else None
        if state is None:
            state = await self.new_state(inp or {})
            prompt = list(state["prompt"])
            for i, m in enumerate(completion):
                if msg_role(m) == "assistant":
                    await self.add_turn(state, prompt + completion[:i], m)
            ep = None
        await self.end(ep, state)
        self.ended.discard(ep)
        return state

    async def score(self, req):
        completion = self.messages_in(req.get("completion") or [])
        state = await self.played_state(req.get("episode"), req.get("input"), completion)
        if self.group_rewards():
            # score_rollout refuses group reward functions; a rollout on
            # its own is a group of one.
            await self.env.rubric.score_group([state])
        else:
            await self.env.rubric.score_rollout(state)
        await self.rubric_cleanup(state)
        return score_out(state)

    async def score_group(self, req):
        """Scores the played episodes of one group together; an episode the
        child does not hold (it restarted) gets null."""
        eps = [ep for ep in req.get("episodes") or [] if ep in self.states]
        states = [await self.played_state(ep, None, []) for ep in eps]
        if states:
            await self.env.rubric.score_group(states)
        for s in states:
            await self.rubric_cleanup(s)
        by_ep = {ep: score_out(s) for ep, s in zip(eps, states)}
        return {"scores": [by_ep.get(ep) for ep in req.get("episodes") or []]}

    async def rubric_cleanup(self, state):
        if hasattr(self.env.rubric, "cleanup"):
            await self.env.rubric.cleanup(state)

    async def drop(self, req):
        ep = req.get("episode")
        state = self.states.pop(ep, None)
        if state is not None:
            await self.end_quietly(ep, state)
        self.ended.discard(ep)
        return {}


def score_out(state):
    metrics = {}
    for k, v in (state.get("metrics") or {}).items():
        try:
            metrics[str(k)] = float(v)
        except (TypeError, ValueError):
            pass
    return {"reward": float(state.get("reward") or 0.0), "metrics": metrics}


def row_out(row):
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


def load_legacy(vf, env_id, own, args):
    try:
        env = vf.load_environment(env_id, **args)
    except Exception as e:
        missing_module(e, own)
        cause = e.__cause__ or e
        raise Fail("load", "%s (%s)" % (one_line(e), one_line("%s: %s" % (type(cause).__name__, cause))))
    return LegacyBridge(vf, env, env_id)
