"""A verifiers environment that misbehaves on request, for grpo's bridge
tests: its env_response crashes the process, hangs, or raises."""

import os
import subprocess
import sys
import time

import verifiers as vf


class TroubleEnv(vf.MultiTurnEnv):
    async def env_response(self, messages, state, **kwargs):
        what = messages[-1]["content"]
        if what == "crash":
            print("about to crash", flush=True)  # goes to stderr, not the protocol stream
            os.write(2, b"ZeroDivisionError: the env fell over\n")
            os._exit(7)
        if what == "hang":
            time.sleep(3600)  # blocks the event loop, as a sync call would
        if what == "raise":
            raise KeyError("no such board")
        if what == "spawn":  # a child and a grandchild, holding stdout and stderr
            subprocess.Popen(["sh", "-c", "sleep 1000 & exec sleep 1000"])
            return [{"role": "user", "content": "spawned"}]
        if what == "spawn-and-exit":  # dies, leaving a child that holds its pipes
            subprocess.Popen(["sleep", "1000"])
            os.write(2, b"exiting with a child left behind\n")
            os._exit(3)
        if what == "escape-and-exit":  # dies, leaving a child outside its group that holds its pipes
            subprocess.Popen(["sleep", "1000"], start_new_session=True)
            os._exit(4)
        if what == "long-stderr":  # one line far over any line buffer
            sys.stderr.write("x" * (3 << 20) + "\n")
            sys.stderr.flush()
            return [{"role": "user", "content": "wrote"}]
        if what == "alloc":
            block = bytearray(1 << 30)
            return [{"role": "user", "content": "allocated %d" % len(block)}]
        if what == "vf-error":
            raise vf.Error("the tool failed")
        return [{"role": "user", "content": "again"}]


def load_environment():
    rows = [{"question": "Say something.", "answer": ""}]
    return TroubleEnv(dataset=rows, rubric=vf.Rubric(funcs=[lambda **k: 0.5]), max_turns=5)
