"""A scripted agent program for the interception endpoint's tests.

Standard library only. It reads the task from standard input, makes three
chat calls to OPENAI_BASE_URL — the second extends the first's
conversation, the third rewrites the history (a fresh conversation that
summarises the first) — then prints an answer and exits. AGENT_MODE
changes that: "hang" calls once and then never calls or exits again,
"fail" calls once and exits with status 3, "tools" offers a tool, sends
the model's tool calls back with their results (one extending call) and
fails unless the first answer called the tool. With AGENT_LOG set, each
call's usage (as the endpoint reports it) is appended to that file as a
JSON line. AGENT_SLEEP (seconds) is slept before each call after the
first, as an agent's own work between calls.
"""

import json
import os
import sys
import time
import urllib.request

BASE = os.environ["OPENAI_BASE_URL"]
MODE = os.environ.get("AGENT_MODE", "")


TOOLS = [{"type": "function", "function": {"name": "add", "description": "Add one to a.",
          "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}]


def call(messages, tools=None):
    request = {"model": "any", "messages": messages, "temperature": 0.5}
    if tools:
        request["tools"] = tools
    body = json.dumps(request).encode()
    req = urllib.request.Request(
        BASE + "/chat/completions",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
    )
    with urllib.request.urlopen(req, timeout=600) as resp:
        out = json.load(resp)
    if os.environ.get("AGENT_LOG"):
        with open(os.environ["AGENT_LOG"], "a") as log:
            log.write(json.dumps(out["usage"]) + "\n")
    return out["choices"][0]["message"]


SLEEP = float(os.environ.get("AGENT_SLEEP", "0"))
calls = 0


def ask(messages):
    global calls
    if calls and SLEEP:
        time.sleep(SLEEP)
    calls += 1
    return call(messages)["content"]


task = json.load(sys.stdin)
prompt = task["prompt"]
if MODE == "tools":
    message = call(prompt, TOOLS)
    if not message.get("tool_calls"):
        sys.exit("the answer called no tool: " + json.dumps(message))
    results = [{"role": "tool", "tool_call_id": c["id"], "content": "2"} for c in message["tool_calls"]]
    call(prompt + [message] + results, TOOLS)
    print("1")
    sys.exit(0)
first = ask(prompt)
if MODE == "hang":
    time.sleep(3600)
if MODE == "fail":
    print("giving up", file=sys.stderr)
    sys.exit(3)
conversation = prompt + [
    {"role": "assistant", "content": first},
    {"role": "user", "content": "Check your answer once more."},
]
second = ask(conversation)
# Rewrite the history: keep the system prompt, replace the rest by a note.
fresh = [m for m in prompt if m["role"] == "system"] + [
    {"role": "user", "content": "Notes so far: %d and %d characters. Final answer?" % (len(first), len(second))}
]
third = ask(fresh)
print("1" if (len(first) + len(second) + len(third)) % 2 == 0 else "0")
