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

# Wiki-search: the reference judge on a final reply, with the judge's
# scripted reply; and the toolset's replies over grpo's bundled corpus.
Q = "What is the main town of Greater Holm?"
A = "Skerrow"


def reply(text):
    return [{"role": "assistant", "content": text}]


def judged(name, judge_reply, completion=None, question=Q, answer=A):
    return dict(name=name, judge_reply=judge_reply, completion=completion or reply("It is Skerrow."),
                question=question, answer=answer)


WIKI_CASES = [
    judged("bare yes", "yes"),
    judged("bare no", "no"),
    judged("capitalised with a full stop", "Yes."),
    judged("the last standalone choice counts", "The response says yes, but no."),
    judged("a verdict line wins over later text", "Verdict: no\nOn reflection, yes"),
    judged("Answer: line", "Reasoning first.\nAnswer: yes"),
    judged("FINAL ANSWER IS", "final answer is yes"),
    judged("Judgment with a dash", "  Judgment - no"),
    judged("a verdict line takes the first choice after it", "Verdict: unsure\nyes"),
    judged("words containing the choices are not choices", "yesterday nobody knows"),
    judged("judge thinking is skipped", "<think>no, wait</think>\nyes"),
    judged("unclosed judge thinking", "<think>it is yes"),
    judged("boxed verdict after thinking", "<think>\\boxed{yes}</think> I lean yes: \\boxed{no}"),
    judged("unclosed box falls back to the text", "\\boxed{yes"),
    judged("empty reply is 0, the judge not asked", "yes", completion=reply("")),
    judged("blank reply is 0, the judge not asked", "yes", completion=reply("  \n\t ")),
    judged("the model's thinking reaches the judge", "yes", completion=reply("<think>Orsk? No.</think>\n\nSkerrow.\n")),
    judged("the last assistant message is the reply", "yes", completion=[
        {"role": "assistant", "content": "Let me look."}, {"role": "tool", "content": "[]"},
        {"role": "assistant", "content": "Skerrow, the main town."}]),
    judged("placeholders in the fields are not expanded", "no", question="Is {answer} the town's name?",
           completion=reply("{question} {response}")),
]

WIKI_TOOL_CASES = [
    dict(name="sections of a page", tool="view_sections", arguments={"page_id": "mount_sefa"}),
    dict(name="sections of a missing page", tool="view_sections", arguments={"page_id": "everest"}),
    dict(name="the last section", tool="read_section", arguments={"section_id": "mount_sefa:climbing"}),
    dict(name="a middle section", tool="read_section", arguments={"section_id": "mount_sefa:geology"}),
    dict(name="the full page", tool="read_section", arguments={"section_id": "mount_sefa:full"}),
    dict(name="section id without a colon", tool="read_section", arguments={"section_id": "mount_sefa"}),
    dict(name="Section not found", tool="read_section", arguments={"section_id": "mount_sefa:lava"}),
    dict(name="section ids are lower case", tool="read_section", arguments={"section_id": "mount_sefa:Climbing"}),
    dict(name="section of a missing page", tool="read_section", arguments={"section_id": "everest:history"}),
]
