"""A verifiers v1 taskset for grpo's bridge tests, shaped as a60a606's
reverse-text: single-turn (a @vf.stop after one turn), an LCS reward on
the text in <reversed_text> tags and a length metric; args fill its
config (n tasks, a word prefix)."""

import re
from difflib import SequenceMatcher

import verifiers.v1 as vf

TAG = re.compile(r"<reversed_text>(.*?)</reversed_text>", re.DOTALL)
WORDS = ["stressed", "drawer", "parts", "level", "live"]


class ReverseData(vf.TaskData):
    answer: str


class ReverseTask(vf.Task[ReverseData]):
    @vf.stop
    async def single_turn(self, trace):
        return trace.num_turns >= 1

    @vf.reward(weight=1.0)
    async def lcs(self, trace):
        m = TAG.search(trace.last_reply or "")
        return SequenceMatcher(None, m.group(1).strip() if m else "", self.data.answer).ratio()

    @vf.metric
    async def length(self, trace):
        return float(len(trace.last_reply))


class ReverseConfig(vf.TasksetConfig):
    n: int = 3
    prefix: str = ""


class ReverseTaskset(vf.Taskset[ReverseTask, ReverseConfig]):
    def load(self):
        for i, w in enumerate(WORDS[: self.config.n]):
            word = self.config.prefix + w
            yield ReverseTask(ReverseData(idx=i, prompt=word, system_prompt="Reverse the text in <reversed_text> tags.",
                                          answer=word[::-1]), self.config.task)


__all__ = ["ReverseTaskset"]
