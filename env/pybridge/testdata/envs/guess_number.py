"""A two-turn verifiers environment for grpo's bridge tests: the model
guesses a number, the environment says higher or lower, and the rubric
rewards a right guess and counts the guesses."""

import verifiers as vf


class GuessEnv(vf.MultiTurnEnv):
    async def setup_state(self, state):
        state["guesses"] = []

    async def env_response(self, messages, state, **kwargs):
        guess = messages[-1]["content"].strip()
        state["guesses"].append(guess)
        target = state["answer"]
        if guess == target:
            state["final_env_response"] = [{"role": "user", "content": "correct"}]
            return []
        hint = "higher" if guess.isdigit() and int(guess) < int(target) else "lower"
        return [{"role": "user", "content": hint}]


def correct(completion, answer, **kwargs):
    said = [m["content"].strip() for m in completion if m["role"] == "assistant"]
    return 1.0 if answer in said else 0.0


def guesses(state):
    return float(len(state["guesses"]))


def load_environment(max_turns=2, secret="7", with_eval=True):
    rows = [{"question": "Guess a number from 1 to 9.", "answer": secret, "info": {"level": i}} for i in range(3)]
    rubric = vf.Rubric(funcs=[correct, guesses], weights=[1.0, 0.0])
    return GuessEnv(dataset=rows, eval_dataset=rows[:1] if with_eval else None,
                    system_prompt="Answer with one digit.", rubric=rubric, max_turns=max_turns)
