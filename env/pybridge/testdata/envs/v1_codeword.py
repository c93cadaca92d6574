"""A multi-turn verifiers v1 taskset for grpo's bridge tests, shaped as
a60a606's color-codeword: the package exports an Env whose run() drives
the interaction, revealing one letter per turn; the reward is an exact
match of the last answer with the whole codeword."""

import verifiers.v1 as vf


class CodewordData(vf.TaskData):
    answer: str


class CodewordTask(vf.Task[CodewordData]):
    @vf.reward(weight=1.0)
    async def exact(self, trace):
        return 1.0 if trace.last_reply == self.data.answer else 0.0

    @vf.metric
    async def turns(self, trace):
        return float(trace.num_turns)


class CodewordTaskset(vf.Taskset[CodewordTask, vf.TasksetConfig]):
    def load(self):
        for i, word in enumerate(["ABC", "BAD"]):
            yield CodewordTask(CodewordData(idx=i, prompt="Letter 1 is %s. Say the codeword so far." % word[0],
                                            answer=word))


class CodewordEnv(vf.SingleAgentEnv):
    MAX_TURNS = 3

    async def run(self, task, agents):
        word = task.data.answer
        async with agents.agent.interaction(task) as interaction:
            segment = await interaction.turn()
            for i in range(1, len(word)):
                if segment.terminated:
                    break
                segment = await interaction.turn([vf.UserMessage(content="Letter %d is %s. Say the codeword so far."
                                                                 % (i + 1, word[i]))])


__all__ = ["CodewordTaskset", "CodewordEnv"]
