#!/usr/bin/env python3
"""Write testdata/tokenizer/chat-glm45.json: conversations rendered with the
GLM-4.5 chat template of testdata/tokenizer/glm45/ (its source and what it
is not: the README there) by Jinja2, configured as transformers'
apply_chat_template configures it (as qwen35_chat.py does), the reference for
grpo's gonja rendering.

Usage (from the repository root; needs only Jinja2):

    python3 scripts/chat-goldens/glm45_chat.py
"""

import os
import random

import chat_env
from chat_env import SEED, call

ROOT = os.path.join("testdata", "tokenizer")
TEMPLATE = os.path.join(ROOT, "glm45", "chat_template.jinja")
OUT = os.path.join(ROOT, "chat-glm45.json")




WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich"},
        "days": {"type": "integer"}, "metric": {"type": "boolean"}}, "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search documents.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "limit": {"type": "number"},
        "filters": {"type": "object"}, "tags": {"type": "array", "items": {"type": "string"}}}}}}



CASES = [
    {"name": "single user",
     "messages": [{"role": "user", "content": "What is 2+2?"}], "add_generation_prompt": True},
    {"name": "system, thinking off",
     "messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"}],
     "add_generation_prompt": True, "enable_thinking": False},
    {"name": "thinking off, user already says /nothink",
     "messages": [{"role": "user", "content": "Hi /nothink"}], "add_generation_prompt": True, "enable_thinking": False},
    {"name": "tools",
     "messages": [{"role": "user", "content": "Weather in Zürich?"}], "tools": [WEATHER, SEARCH],
     "add_generation_prompt": True},
    {"name": "tool loop with typed arguments, responses, reasoning kept after the last user turn",
     "messages": [
         {"role": "user", "content": "Find docs and the weather."},
         {"role": "assistant", "content": "Searching.", "reasoning_content": " Two tools. ",
          "tool_calls": [call("search", {"query": "a <b> & c\nline", "limit": 2.5, "filters": {"lang": "fr", "n": [1, None]}, "tags": ["x", "é"]}),
                         call("get_weather", {"city": "Paris", "days": 3, "metric": True})]},
         {"role": "tool", "content": "[\"doc1\"]"},
         {"role": "tool", "content": "18°C"},
         {"role": "assistant", "content": "Done.", "reasoning_content": "ok"}],
     "tools": [WEATHER, SEARCH]},
    {"name": "earlier reasoning dropped, think tags split from content",
     "messages": [
         {"role": "user", "content": "Hi"},
         {"role": "assistant", "content": "<think>\ngreet\n</think>\n\nHello!"},
         {"role": "user", "content": "Again"},
         {"role": "assistant", "content": "<think>again</think>Hello again!"}]},
    {"name": "generation prompt after a tool response",
     "messages": [
         {"role": "user", "content": "Weather?"},
         {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Oslo"})]},
         {"role": "tool", "content": "-3°C"}],
     "tools": [WEATHER], "add_generation_prompt": True},
]

PIECES = ["hi", " ", "\n", "\t", "é", "中文", "\"", "\\", "'", "<b>", "&", "<think>", "</think>",
          "<arg_key>", "</arg_value>", "None", "True", "{", "}"]

VALUES = chat_env.Values(PIECES, [0.5, -2.25, 1e-05, 0.1, 1e16, 123456789.125, 3.0, -0.0, 1e22])
random_text, random_value = VALUES.text, VALUES.value


def random_case(rng, i):
    msgs = []
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": random_text(rng)})
    msgs.append({"role": "user", "content": random_text(rng) + "q"})
    for _ in range(rng.randint(0, 3)):
        m = {"role": "assistant", "content": random_text(rng)}
        if rng.random() < 0.4:
            m["reasoning_content"] = random_text(rng)
        if rng.random() < 0.6:
            m["tool_calls"] = [call("f" + str(k), {"p" + str(j): random_value(rng) for j in range(rng.randint(0, 3))})
                               for k in range(rng.randint(1, 2))]
            msgs.append(m)
            for _ in range(rng.randint(1, 2)):
                msgs.append({"role": "tool", "content": random_text(rng)})
        else:
            msgs.append(m)
            msgs.append({"role": "user", "content": random_text(rng) + "u"})
    case = {"name": "random %d" % i, "messages": msgs, "add_generation_prompt": rng.random() < 0.7}
    if rng.random() < 0.5:
        case["tools"] = [WEATHER] if rng.random() < 0.5 else [SEARCH, WEATHER]
    r = rng.random()
    if r < 0.3:
        case["enable_thinking"] = False
    elif r < 0.6:
        case["enable_thinking"] = True
    return case


def main():
    tpl = chat_env.load(chat_env.environment(), TEMPLATE)
    rng = random.Random(SEED)
    out = []
    for case in CASES + [random_case(rng, i) for i in range(40)]:
        kwargs = {"messages": case["messages"], "tools": case.get("tools"),
                  "add_generation_prompt": case.get("add_generation_prompt", False)}
        if "enable_thinking" in case:
            kwargs["enable_thinking"] = case["enable_thinking"]
        out.append(chat_env.render(tpl, case, kwargs))
    chat_env.write(OUT, out, len(out))


if __name__ == "__main__":
    main()
