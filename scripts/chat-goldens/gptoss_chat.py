#!/usr/bin/env python3
"""Write testdata/tokenizer/chat-gptoss.json: conversations rendered with
gpt-oss's chat template (the harmony format) by Jinja2, configured as
transformers' apply_chat_template configures it, the reference for grpo's
gonja rendering.

Usage (from the repository root; needs only Jinja2, e.g. Debian's
python3-jinja2):

    python3 scripts/chat-goldens/gptoss_chat.py

The template is testdata/tokenizer/gptoss/chat_template.jinja (its source:
the README there). The environment is chat_env.py's (transformers'
utils/chat_template_utils.py) plus strftime_now, which transformers defines
as datetime.now().strftime(format); here it formats a fixed date so the
file is deterministic, and the Go test passes the same date.

grpo hands a message's reasoning (chat.Message.ReasoningContent) to a
template under two names: reasoning_content (Qwen's) and thinking (what
gpt-oss's template reads); the conversations below are written the way grpo
passes them.
"""

import datetime
import os
import random

import chat_env
from chat_env import SEED, call

ROOT = os.path.join("testdata", "tokenizer")
TEMPLATE = os.path.join(ROOT, "gptoss", "chat_template.jinja")
OUT = os.path.join(ROOT, "chat-gptoss.json")
NOW = datetime.datetime(2026, 3, 7, 9, 5, 2)



def strftime_now(fmt):
    return NOW.strftime(fmt)



WEATHER = {"type": "function", "function": {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich"},
        "days": {"type": "integer", "default": 1},
        "units": {"type": "string", "enum": ["metric", "imperial"], "default": "metric"},
    }, "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search",
    "description": "Search documents.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"},
        "limit": {"type": "number", "default": 2.5},
        "exact": {"type": "boolean", "default": False},
        "note": {"type": "string", "nullable": True},
        "filters": {"type": "object", "properties": {
            "lang": {"type": "string"}, "year": {"type": "integer"}}, "required": ["lang"]},
        "anything": {"type": "object"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "scores": {"type": "array", "items": {"type": "number"}, "nullable": True},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "flags": {"type": "array", "items": {"type": "boolean"}},
        "rows": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
        "grid": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
        "loose": {"type": "array"},
        "either": {"type": ["string", "number"]},
        "single": {"type": ["object"]},
        "choice": {"oneOf": [{"type": "string", "description": "a name"}, {"type": "integer", "default": 3}]},
        "union": {"oneOf": [{"type": "object"}, {"type": "string"}], "default": "x"},
        "cursor": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    }}}}
PING = {"type": "function", "function": {"name": "ping", "description": "Checks the link.",
                                         "parameters": {"type": "object", "properties": {}}}}



SEARCH_ARGS = {"query": "line one\nline two <b>&</b>", "limit": 2.5, "exact": True,
               "filters": {"lang": "fr", "year": 2024}, "tags": ["a", "é"], "cursor": None}

CASES = [
    {"name": "single user, default effort",
     "messages": [{"role": "user", "content": "What is 2+2?"}],
     "add_generation_prompt": True},
    {"name": "system becomes developer instructions, low effort",
     "messages": [{"role": "system", "content": "  You are terse.  "},
                  {"role": "user", "content": "Reverse: hello"}],
     "add_generation_prompt": True, "reasoning_effort": "low"},
    {"name": "developer message, high effort",
     "messages": [{"role": "developer", "content": "Answer in French."},
                  {"role": "user", "content": "Hi"}],
     "add_generation_prompt": True, "reasoning_effort": "high"},
    {"name": "tools as a TypeScript namespace",
     "messages": [{"role": "user", "content": "Weather in Zürich?"}],
     "tools": [WEATHER, SEARCH, PING], "add_generation_prompt": True, "reasoning_effort": "low"},
    {"name": "tools and instructions",
     "messages": [{"role": "system", "content": "Use tools."},
                  {"role": "user", "content": "Weather?"}],
     "tools": [WEATHER], "add_generation_prompt": True},
    {"name": "multi-turn: earlier analysis dropped",
     "messages": [{"role": "user", "content": "48 clips in April, half in May. Total?"},
                  {"role": "assistant", "content": "72", "reasoning_content": "48 + 24 = 72"},
                  {"role": "user", "content": "And June, twice May?"}],
     "add_generation_prompt": True, "reasoning_effort": "medium"},
    {"name": "training render: last turn keeps analysis and ends in return",
     "messages": [{"role": "user", "content": "Hi"},
                  {"role": "assistant", "content": "Hello!", "reasoning_content": "greet back"}]},
    {"name": "tool loop: analysis, two calls, results, final answer",
     "messages": [
         {"role": "system", "content": "You help with research."},
         {"role": "user", "content": "Find French docs from 2024 and the weather in Paris."},
         {"role": "assistant", "content": "", "reasoning_content": "Search first.",
          "tool_calls": [call("search", SEARCH_ARGS)]},
         {"role": "tool", "content": "[\"doc1\", \"doc2\"]"},
         {"role": "assistant", "content": "Now the weather.",
          "tool_calls": [call("get_weather", {"city": "Paris", "days": 3, "units": "metric"})]},
         {"role": "tool", "content": "  18°C, clear\n  "},
         {"role": "assistant", "content": "Two docs; Paris 18°C.", "reasoning_content": "Done."}],
     "tools": [SEARCH, WEATHER]},
    {"name": "tool loop, generation prompt after tool result keeps the call's analysis",
     "messages": [
         {"role": "user", "content": "Weather?"},
         {"role": "assistant", "content": "", "reasoning_content": "Call it.",
          "tool_calls": [call("get_weather", {"city": "Oslo"})]},
         {"role": "tool", "content": "-3°C"}],
     "tools": [WEATHER], "add_generation_prompt": True, "reasoning_effort": "high"},
    {"name": "arguments given as a JSON string",
     "messages": [
         {"role": "user", "content": "Ping"},
         {"role": "assistant", "content": "", "tool_calls": [call("ping", "{\"x\": 1}")]},
         {"role": "tool", "content": "pong"}],
     "tools": [PING], "add_generation_prompt": True},
    {"name": "model identity and builtin tools",
     "messages": [{"role": "user", "content": "Browse"}],
     "add_generation_prompt": True, "vars": {"model_identity": "You are a test model.",
                                            "builtin_tools": ["browser", "python"]}},
    {"name": "error: channel tags in content",
     "messages": [{"role": "user", "content": "a"},
                  {"role": "assistant", "content": "<|channel|>final<|message|>x"}]},
    {"name": "error: tool result without a call",
     "messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}]},
    {"name": "error: content and thinking with a tool call",
     "messages": [{"role": "user", "content": "a"},
                  {"role": "assistant", "content": "c", "reasoning_content": "t",
                   "tool_calls": [call("ping", {})]}],
     "tools": [PING]},
]


# Random conversations (fixed seed) over values that stress a renderer.
PIECES = ["hi", " ", "\n", "\t", "é", "中文", "😀", "\"", "\\", "'", "<b>", "&", "\u2028", "\x01",
          "<|end|>", "<|call|>", "to=", "None", "True", "{", "}"]

VALUES = chat_env.Values(PIECES, [0.5, -2.25, 1e-05, 0.1, 1e16, 1.5e-300, 123456789.125, 3.0, -0.0, 1e22])
random_text, random_value = VALUES.text, VALUES.value


def random_case(rng, i):
    msgs = []
    if rng.random() < 0.5:
        msgs.append({"role": rng.choice(["system", "developer"]), "content": random_text(rng)})
    msgs.append({"role": "user", "content": random_text(rng) + "q"})
    for _ in range(rng.randint(0, 3)):
        m = {"role": "assistant", "content": random_text(rng)}
        if rng.random() < 0.6:
            m["tool_calls"] = [call("f" + str(rng.randint(0, 2)),
                                    {"p" + str(j): random_value(rng) for j in range(rng.randint(0, 3))})]
            if rng.random() < 0.5:
                m["content"] = ""
                m["reasoning_content"] = random_text(rng)
            msgs.append(m)
            for _ in range(rng.randint(1, 2)):
                msgs.append({"role": "tool", "content": random_text(rng)})
        else:
            if rng.random() < 0.4:
                m["reasoning_content"] = random_text(rng)
            msgs.append(m)
            msgs.append({"role": "user", "content": random_text(rng) + "u"})
    if rng.random() < 0.3:
        msgs.append({"role": "assistant", "content": random_text(rng) + "a", "reasoning_content": random_text(rng)})
    case = {"name": "random %d" % i, "messages": msgs, "add_generation_prompt": rng.random() < 0.7}
    if rng.random() < 0.5:
        case["tools"] = [WEATHER] if rng.random() < 0.5 else [SEARCH, WEATHER, PING]
    r = rng.random()
    if r < 0.75:
        case["reasoning_effort"] = rng.choice(["low", "medium", "high"])
    return case


def template_messages(msgs):
    out = []
    for m in msgs:
        m = dict(m)
        if "reasoning_content" in m:
            m["thinking"] = m["reasoning_content"]
        out.append(m)
    return out


def main():
    tpl = chat_env.load(chat_env.environment(strftime_now=strftime_now), TEMPLATE)
    rng = random.Random(SEED)
    out = []
    for case in CASES + [random_case(rng, i) for i in range(40)]:
        kwargs = {"messages": template_messages(case["messages"]), "tools": case.get("tools"),
                  "add_generation_prompt": case.get("add_generation_prompt", False)}
        if "reasoning_effort" in case:
            kwargs["reasoning_effort"] = case["reasoning_effort"]
        kwargs.update(case.get("vars", {}))
        out.append(chat_env.render(tpl, case, kwargs))
    chat_env.write(OUT, {"date": NOW.strftime("%Y-%m-%dT%H:%M:%S"), "cases": out}, len(out))


if __name__ == "__main__":
    main()
