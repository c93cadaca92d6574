"""The hand-made cases of env/testdata/verifiers_v1_games_golden.jsonl.

Wordle: each case names a task of the seeded stream (its secret, drawn by
TextArena from grpo's builtin list, is in the comment) and the assistant
replies; verifiers_v1_games_golden.py plays them through TextArenaEnv.run.
"""

WORDLE_CASES = [
    dict(name="bare word wins at once", seed=0, turns=["union"]),  # union
    dict(name="bracket mid-sentence, win on guess three", seed=1, turns=[  # cabin
        "Let me open with [crane].", "Now [basic]?", "It must be [cabin]."]),
    dict(name="six misses: last guess's completion", seed=2, turns=[  # video
        "[crane]", "[slate]", "[moist]", "[pouch]", "[fjord]", "[vivid]"]),
    dict(name="two invalid moves before any guess", seed=3, turns=["[cat]", "[dog]"]),  # drawn
    dict(name="a guess, then two invalid moves", seed=4, turns=[  # drama
        "[dream]", "[qwxyz]", "[dramas]"]),
    dict(name="bare word with whitespace", seed=5, turns=["  route \n"]),  # route
    dict(name="bare sentence is one bad token", seed=6, turns=[  # third
        "I guess third", "[third]"]),
    dict(name="first bracket anywhere, even in thinking", seed=7, turns=[  # fresh
        "<think>maybe [crane]</think> final: [fresh]", "[fresh] for sure"]),
    dict(name="stray bracket stops the wrapping; repeat ends", seed=8, turns=[  # dirty
        "[crane]", "crane]", "[crane]"]),
    dict(name="cut off by the turn cap", seed=9, max_turns=3, turns=[  # media
        "[crane]", "[slate]", "[moist]", "[media]"]),
    dict(name="win on the capped turn counts", seed=10, max_turns=3, turns=[  # prime
        "[crane]", "[slate]", "[prime]"]),
    dict(name="cut off when the replies run out", seed=11, turns=["[crane]", "[marsh]"]),  # march
    dict(name="upper-case guess", seed=12, turns=["[MODEL]"]),  # model
    dict(name="invalid before each of six guesses", seed=13, turns=[  # enemy
        "[xx]", "[crane]", "[xx]", "[slate]", "[xx]", "[moist]",
        "[xx]", "[pouch]", "[xx]", "[fjord]", "[xx]", "[every]"]),
    dict(name="digits are word characters; punctuation is not", seed=14, turns=[  # booth
        "[b00th]", "[booth!]"]),
    dict(name="repeated letters", seed=15, turns=["[croon]", "[crown]"]),  # crown
    dict(name="empty replies", seed=16, turns=["", "   "]),  # grown
    dict(name="markdown around the bracket", seed=17, turns=["**[outer]**"]),  # outer
    dict(name="non-ASCII letters are word characters", seed=18, turns=[  # cloud
        "[clöud]", "[cloud]"]),
    dict(name="too long, then yellows on the sixth", seed=19, turns=[  # since
        "[sinces]", "[crane]", "[slate]", "[moist]", "[pouch]", "[fjord]", "[spice]"]),
]

WIKI_CASES = []
WIKI_TOOL_CASES = []
