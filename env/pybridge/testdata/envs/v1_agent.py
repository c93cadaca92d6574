"""A verifiers v1 taskset whose package exports its own Harness, one that
runs an agent program: a python one-liner that sends the task's prompt to
the model at the endpoint the harness is given (grpo's interception
endpoint) and exits. The reward is 1 when the model answered anything."""

import sys

import verifiers.v1 as vf
from verifiers.v1.runtimes import ProgramResult

PROGRAM = """
import json, os, sys, urllib.request
prompt = json.loads(os.environ["TASK_PROMPT"])
req = urllib.request.Request(os.environ["ENDPOINT"] + "/chat/completions",
    data=json.dumps({"model": "m", "messages": prompt}).encode(),
    headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["SECRET"]})
with urllib.request.urlopen(req, timeout=600) as resp:
    json.load(resp)
"""


class AgentTask(vf.Task[vf.TaskData]):
    @vf.reward(weight=1.0)
    async def answered(self, trace):
        return 1.0 if trace.last_reply else 0.0


class AgentTaskset(vf.Taskset[AgentTask, vf.TasksetConfig]):
    def load(self):
        yield AgentTask(vf.TaskData(idx=0, prompt="Fix the bug."))
        yield AgentTask(vf.TaskData(idx=1, prompt="Write the test."))


class AgentHarness(vf.Harness):
    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data):
        import json

        prompt = [{"role": "user", "content": data.prompt}]
        return await runtime.run([sys.executable, "-c", PROGRAM],
                                 {"ENDPOINT": endpoint, "SECRET": secret, "TASK_PROMPT": json.dumps(prompt)})


__all__ = ["AgentTaskset", "AgentHarness"]
