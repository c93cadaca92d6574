#!/usr/bin/env python3
"""Write testdata/tokenizer/chat-qwen35.json: conversations rendered with
Qwen3.5's chat templates by Jinja2, configured as transformers'
apply_chat_template configures it, the reference for grpo's gonja rendering.

Usage (from the repository root; needs only Jinja2, e.g. Debian's
python3-jinja2):

    python3 scripts/chat-goldens/qwen35_chat.py

The templates are testdata/tokenizer/qwen35/*.jinja (sources in the README
there). The environment is chat_env.py's (transformers'
utils/chat_template_utils.py); tools are passed as None when a conversation
has none.
"""

import os
import random

import chat_env
from chat_env import SEED, call

ROOT = os.path.join("testdata", "tokenizer")
TEMPLATES = {
    # Qwen3.5-4B and larger (thinking by default).
    "large": os.path.join(ROOT, "qwen35", "chat_template.jinja"),
    # Qwen3.5-0.8B and -2B (non-thinking by default).
    "small": os.path.join(ROOT, "qwen35", "chat_template-small.jinja"),
}
OUT = os.path.join(ROOT, "chat-qwen35.json")




WEATHER = {"type": "function", "function": {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich"},
        "days": {"type": "integer"},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
    }, "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search",
    "description": "Search documents.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"},
        "limit": {"type": "number"},
        "exact": {"type": "boolean"},
        "filters": {"type": "object"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "cursor": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    }}}}



SEARCH_ARGS = {"query": "line one\nline two <b>&</b>", "limit": 2.5, "exact": True,
               "filters": {"lang": "fr", "year": 2024, "nested": {"k": [1, None]}},
               "tags": ["a", "é"], "cursor": None}

CASES = [
    {"name": "single user, default thinking",
     "messages": [{"role": "user", "content": "What is 2+2?"}],
     "add_generation_prompt": True},
    {"name": "system + user, thinking off",
     "messages": [{"role": "system", "content": "  You are terse.  "},
                  {"role": "user", "content": "Reverse: hello"}],
     "add_generation_prompt": True, "enable_thinking": False},
    {"name": "thinking on",
     "messages": [{"role": "user", "content": "Solve x+1=3."}],
     "add_generation_prompt": True, "enable_thinking": True},
    {"name": "multi-turn, earlier reasoning dropped",
     "messages": [{"role": "system", "content": "Answer briefly."},
                  {"role": "user", "content": "48 clips in April, half in May. Total?"},
                  {"role": "assistant", "content": "72", "reasoning_content": "48 + 24 = 72"},
                  {"role": "user", "content": "And June, twice May?"}],
     "add_generation_prompt": True},
    {"name": "think tags split out of content",
     "messages": [{"role": "user", "content": "Hi"},
                  {"role": "assistant", "content": "<think>\ngreet back\n</think>\n\nHello!"}]},
    # A Qwen3.5 completion has no <think>: the generation prompt opened it.
    {"name": "completion text as content (no opening think tag)",
     "messages": [{"role": "user", "content": "Hi"},
                  {"role": "assistant", "content": "greet back\n</think>\n\nHello!"},
                  {"role": "user", "content": "Again"},
                  {"role": "assistant", "content": "once more\n</think>\n\nHello again!"}]},
    {"name": "earlier think tags dropped",
     "messages": [{"role": "user", "content": "Hi"},
                  {"role": "assistant", "content": "<think>\ngreet back\n</think>\n\nHello!"},
                  {"role": "user", "content": "Bye"}],
     "add_generation_prompt": True, "enable_thinking": False},
    {"name": "tools, no system message",
     "messages": [{"role": "user", "content": "Weather in Zürich?"}],
     "tools": [WEATHER], "add_generation_prompt": True},
    {"name": "tool loop: calls with many parameter types, responses, final answer",
     "messages": [
         {"role": "system", "content": "You help with research."},
         {"role": "user", "content": "Find French docs from 2024 and the weather in Paris."},
         {"role": "assistant", "content": "I will search and check the weather.",
          "reasoning_content": "Two tools needed.",
          "tool_calls": [call("search", SEARCH_ARGS),
                         call("get_weather", {"city": "Paris", "days": 3, "units": "metric"})]},
         {"role": "tool", "content": "[\"doc1\", \"doc2\"]"},
         {"role": "tool", "content": "  18°C, clear  "},
         {"role": "assistant", "content": "", "reasoning_content": "Need more.",
          "tool_calls": [call("get_weather", {"city": "Lyon", "days": 1.0, "big": 1e20, "neg": -0.5})]},
         {"role": "tool", "content": "12°C"},
         {"role": "assistant", "content": "Two docs; Paris 18°C, Lyon 12°C."}],
     "tools": [SEARCH, WEATHER]},
    {"name": "tool loop, generation prompt after tool response",
     "messages": [
         {"role": "user", "content": "Weather?"},
         {"role": "assistant", "content": "<think>\nCall it.\n</think>\n\n",
          "tool_calls": [call("get_weather", {"city": "Oslo"})]},
         {"role": "tool", "content": "-3°C"}],
     "tools": [WEATHER], "add_generation_prompt": True, "enable_thinking": True},
    {"name": "user message wrapped in tool_response is not a query",
     "messages": [
         {"role": "user", "content": "Start"},
         {"role": "assistant", "content": "ok", "reasoning_content": "r1"},
         {"role": "user", "content": "<tool_response>\nx\n</tool_response>"},
         {"role": "assistant", "content": "done", "reasoning_content": "r2"}]},
    {"name": "error: system message not first",
     "messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]},
    {"name": "error: no user query",
     "messages": [{"role": "system", "content": "only a system prompt"}]},
]


# Random conversations (fixed seed) over the values that stress a renderer:
# floats at the edges of Python's repr, big and negative integers, empty and
# nested containers, strings with quotes, backslashes, control and
# non-ASCII characters, whitespace that |trim removes, think tags.
PIECES = ["hi", " ", "\n", "\t", "é", "中文", "😀", "\"", "\\", "'", "<b>", "&", "\u2028", "\x01",
          "<think>", "</think>", "<tool_response>", "</tool_response>", "None", "True", "{", "}"]

VALUES = chat_env.Values(PIECES, [0.5, -2.25, 1e-05, 0.1, 1e16, 1.5e-300, 123456789.125, 3.0, -0.0, 1e22])
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
    env = chat_env.environment()
    templates = {k: chat_env.load(env, p) for k, p in TEMPLATES.items()}
    rng = random.Random(SEED)
    out = []
    for case in CASES + [random_case(rng, i) for i in range(40)]:
        for variant, tpl in templates.items():
            kwargs = {"messages": case["messages"], "tools": case.get("tools"),
                      "add_generation_prompt": case.get("add_generation_prompt", False)}
            if "enable_thinking" in case:
                kwargs["enable_thinking"] = case["enable_thinking"]
            named = dict(case, name=variant + ": " + case["name"], template=os.path.basename(TEMPLATES[variant]))
            out.append(chat_env.render(tpl, named, kwargs))
    chat_env.write(OUT, out, len(out))


if __name__ == "__main__":
    main()
