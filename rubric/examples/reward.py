#!/usr/bin/env python3
"""A reward program for rubric.Command: one rollout as JSON on stdin, the
reward on stdout. Scores 1 when the reference answer appears in the last
assistant message after its thinking, and reports the answer's length as a
metric.

    rubric.CommandConfig{Argv: []string{"python3", "rubric/examples/reward.py"}}

Try it by hand:

    echo '{"prompt": [], "completion": [{"role": "assistant", "content": "it is 42"}], "answer": "42", "info": {}}' \
        | python3 rubric/examples/reward.py
"""

import json
import sys


def reward(rollout):
    turns = [m["content"] for m in rollout["completion"] if m["role"] == "assistant"]
    text = turns[-1] if turns else ""
    text = text.split("</think>")[-1]
    answer = rollout["answer"].strip()
    return {
        "reward": 1.0 if answer and answer in text else 0.0,
        "metrics": {"answer_chars": float(len(answer))},
    }


if __name__ == "__main__":
    # Anything printed besides the reply would be read as garbage: log to stderr.
    json.dump(reward(json.load(sys.stdin)), sys.stdout)
    print()
