"""An environment whose package needs a module the python lacks: grpo
names the module in one line."""

import grpo_absent_dependency  # noqa: F401


def load_environment():
    raise AssertionError("never reached")
