"""What the chat-golden scripts share: a Jinja2 environment configured as
transformers' apply_chat_template configures it (utils/chat_template_utils.py:
an ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and the
loopcontrols extension, tojson as json.dumps(ensure_ascii=False),
raise_exception raising TemplateError), the random values that stress a
renderer, and the writer of the rendered cases. A case whose template raises
records the message under "error" instead of "rendered".
"""

import json
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                      separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def environment(**extra_globals):
    """transformers' environment; extra_globals are a family's additions
    (gpt-oss's strftime_now)."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals.update(extra_globals)
    return env


def load(env, path):
    with open(path, encoding="utf-8") as f:
        return env.from_string(f.read())


def call(name, args):
    return {"type": "function", "function": {"name": name, "arguments": args}}


# Seed of every script's random conversations.
SEED = 20261205


class Values:
    """Random text over a family's stress pieces and random JSON values
    (nested containers, extreme numbers) for tool-call arguments. The draw
    order is fixed: the committed goldens depend on it."""

    def __init__(self, pieces, floats):
        self.pieces, self.floats = pieces, floats

    def text(self, rng, n=6):
        return "".join(rng.choice(self.pieces) for _ in range(rng.randint(0, n)))

    def value(self, rng, depth=0):
        kind = rng.randint(0, 9 if depth < 2 else 6)
        if kind == 0:
            return rng.choice([0, -1, 7, 2 ** 40, -(2 ** 63)])
        if kind == 1:
            return rng.choice(self.floats)
        if kind == 2:
            return rng.choice([True, False])
        if kind == 3:
            return None
        if kind in (4, 5, 6):
            return self.text(rng)
        if kind in (7, 8):
            return {self.text(rng, 3) or "k": self.value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
        return [self.value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def render(tpl, case, kwargs):
    """A copy of case with "rendered" (or the template's "error") added."""
    c = dict(case)
    try:
        c["rendered"] = tpl.render(**kwargs)
    except jinja2.exceptions.TemplateError as e:
        c["error"] = str(e)
    return c


def write(path, obj, count):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {count} cases to {path} with Jinja2 {jinja2.__version__}", file=sys.stderr)
