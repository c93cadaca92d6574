"""A verifiers v1 taskset whose package exports its own Harness (one that
would run an agent program): grpo refuses it at load for now."""

import verifiers.v1 as vf


class AgentTaskset(vf.Taskset[vf.Task, vf.TasksetConfig]):
    def load(self):
        yield vf.Task(vf.TaskData(idx=0, prompt="Fix the bug."))


class AgentHarness(vf.Harness):
    pass


__all__ = ["AgentTaskset", "AgentHarness"]
