"""A verifiers v0 environment for grpo's bridge tests of a60a606's legacy
semantics: setup_state returns a new State, a @vf.cleanup handler logs
each episode's end (to the file named by the log arg) and marks the
State, and the rubric is a RubricGroup whose second rubric has a group
reward function (it sees the whole group's completions)."""

import verifiers as vf


class EchoEnv(vf.MultiTurnEnv):
    def __init__(self, log, **kwargs):
        super().__init__(**kwargs)
        self.log = log

    async def setup_state(self, state):
        fresh = vf.State(input=state["input"])
        fresh.update({k: v for k, v in state.items() if k != "input"})
        fresh["fresh"] = True
        return fresh

    async def env_response(self, messages, state, **kwargs):
        said = messages[-1]["content"]
        if said == "raise":
            raise KeyError("no such board")
        return [{"role": "user", "content": "fresh" if state["fresh"] else "stale"}]

    @vf.cleanup
    async def log_end(self, state):
        state["cleaned"] = True
        with open(self.log, "a") as f:
            said = [m["content"] for m in state["completion"] if m["role"] == "assistant"]
            f.write("cleanup %s\n" % " ".join(said))


def correct(completion, answer, **kwargs):
    said = [m["content"] for m in completion if m["role"] == "assistant"]
    return 1.0 if said and said[-1] == answer else 0.0


def cleaned(state):
    return 1.0 if state.get("cleaned") else 0.0


def unique(completions, **kwargs):
    """1 for a rollout whose last answer no other rollout of its group gave."""
    last = [[m["content"] for m in c if m["role"] == "assistant"][-1:] for c in completions]
    return [1.0 if last.count(x) == 1 else 0.0 for x in last]


def load_environment(log, max_turns=2):
    rows = [{"question": "Say a word.", "answer": "yes"}, {"question": "Say another.", "answer": "no"}]
    rubric = vf.RubricGroup(rubrics=[vf.Rubric(funcs=[correct, cleaned], weights=[1.0, 0.0]),
                                     vf.Rubric(funcs=[unique], weights=[0.5])])
    return EchoEnv(log=log, dataset=rows, rubric=rubric, max_turns=max_turns)
