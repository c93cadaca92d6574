"""The hand-made completions of env/testdata/verifiers_golden.jsonl. Each
case names the grpo environment, its args (verifiers' load_environment
arguments of the same names), the completion as chat messages, and the
answer and info of its example. Wordle cases give only the assistant turns
(wordle_turns); verifiers_golden.py plays them through TextArena to get the
game's replies."""


def a(*turns):
    return [{"role": "assistant", "content": t} for t in turns]


def chat(*pairs):
    out = []
    for i, t in enumerate(pairs):
        out.append({"role": "assistant" if i % 2 == 0 else "user", "content": t})
    return out


GSM = "gsm8k"
MATH = "math"
RT = "reverse-text"

CASES = [
    # gsm8k: MathRubric() = MaybeThinkParser + strict last \boxed{} + math-verify.
    dict(env=GSM, name="boxed integer", completion=a(r"3 + 15 = 18, so \boxed{18}."), answer="18"),
    dict(env=GSM, name="boxed fraction", completion=a(r"\boxed{\frac{36}{2}}"), answer="18"),
    dict(env=GSM, name="boxed dfrac", completion=a(r"\boxed{\dfrac{36}{2}}"), answer="18"),
    dict(env=GSM, name="boxed escaped dollar", completion=a(r"She pays \boxed{\$18}."), answer="18"),
    dict(env=GSM, name="boxed sum", completion=a(r"\boxed{2+16}"), answer="18"),
    dict(env=GSM, name="boxed text unit", completion=a(r"\boxed{18\text{ dollars}}"), answer="18"),
    dict(env=GSM, name="boxed bare unit", completion=a(r"\boxed{18 dollars}"), answer="18"),
    dict(env=GSM, name="boxed decimal", completion=a(r"\boxed{18.00}"), answer="18"),
    dict(env=GSM, name="boxed thousands", completion=a(r"\boxed{1,800}"), answer="1800"),
    dict(env=GSM, name="boxed thousands dollars", completion=a(r"\boxed{\$1,800.00}"), answer="1800"),
    dict(env=GSM, name="boxed percent vs number", completion=a(r"\boxed{18\%}"), answer="18"),
    dict(env=GSM, name="boxed percent both", completion=a(r"\boxed{25\%}"), answer="25%"),
    dict(env=GSM, name="boxed assignment", completion=a(r"\boxed{x = 18}"), answer="18"),
    dict(env=GSM, name="boxed wrong", completion=a(r"\boxed{19}"), answer="18"),
    dict(env=GSM, name="hash answer only", completion=a("3 + 15 = 18\n#### 18"), answer="18"),
    dict(env=GSM, name="fbox", completion=a(r"\fbox{18}"), answer="18"),
    dict(env=GSM, name="bare answer", completion=a("The answer is 18."), answer="18"),
    dict(env=GSM, name="unclosed box", completion=a(r"\boxed{18"), answer="18"),
    dict(env=GSM, name="last box counts", completion=a(r"\boxed{17}, no wait: \boxed{18}"), answer="18"),
    dict(env=GSM, name="box after think", completion=a(r"<think>maybe \boxed{17}</think> \boxed{18}"), answer="18"),
    dict(env=GSM, name="box only inside think", completion=a(r"<think>so \boxed{18}</think> The answer is 18."), answer="18"),
    dict(env=GSM, name="last turn only", completion=chat(r"\boxed{18}", "are you sure?", "yes"), answer="18"),
    dict(env=GSM, name="negative", completion=a(r"\boxed{-7}"), answer="-7"),
    dict(env=GSM, name="degrees", completion=a(r"\boxed{90^\circ}"), answer="90"),
    dict(env=GSM, name="empty completion", completion=a(""), answer="18"),
    # math: the same MathRubric on LaTeX answers.
    dict(env=MATH, name="factored vs expanded", completion=a(r"\boxed{(x-1)(x+1)}"), answer="x^2-1"),
    dict(env=MATH, name="square of binomial", completion=a(r"\boxed{x^2+2x+1}"), answer="(x+1)^2"),
    dict(env=MATH, name="commuted sum", completion=a(r"\boxed{1+x}"), answer="x+1"),
    dict(env=MATH, name="different polynomial", completion=a(r"\boxed{x^2+1}"), answer="x^2-1"),
    dict(env=MATH, name="half x", completion=a(r"\boxed{0.5x}"), answer=r"\frac{x}{2}"),
    dict(env=MATH, name="sqrt short form", completion=a(r"\boxed{\frac{\sqrt3}{2}}"), answer=r"\frac{\sqrt{3}}{2}"),
    dict(env=MATH, name="simplified root", completion=a(r"\boxed{2\sqrt{2}}"), answer=r"\sqrt{8}"),
    dict(env=MATH, name="cube root", completion=a(r"\boxed{\sqrt[3]{8}}"), answer="2"),
    dict(env=MATH, name="pi multiple", completion=a(r"\boxed{\frac{6\pi}{2}}"), answer=r"3\pi"),
    dict(env=MATH, name="pi decimal", completion=a(r"\boxed{3.14159}"), answer=r"\pi"),
    dict(env=MATH, name="fraction vs decimal", completion=a(r"\boxed{0.5}"), answer=r"\frac{1}{2}"),
    dict(env=MATH, name="third six places", completion=a(r"\boxed{0.333333}"), answer=r"\frac{1}{3}"),
    dict(env=MATH, name="third three places", completion=a(r"\boxed{0.333}"), answer=r"\frac{1}{3}"),
    dict(env=MATH, name="mixed number", completion=a(r"\boxed{2\frac{1}{2}}"), answer=r"\frac{5}{2}"),
    dict(env=MATH, name="open interval", completion=a(r"\boxed{\left( 1, 2 \right)}"), answer="(1,2)"),
    dict(env=MATH, name="closed vs open interval", completion=a(r"\boxed{[1,2]}"), answer="(1,2)"),
    dict(env=MATH, name="half-open interval", completion=a(r"\boxed{[1, \frac{5}{2})}"), answer="[1,2.5)"),
    dict(env=MATH, name="tuple order", completion=a(r"\boxed{(2,1)}"), answer="(1,2)"),
    dict(env=MATH, name="tuple", completion=a(r"\boxed{(3, -1)}"), answer="(3,-1)"),
    dict(env=MATH, name="set order", completion=a(r"\boxed{\{2, 1\}}"), answer=r"\{1,2\}"),
    dict(env=MATH, name="percent vs number", completion=a(r"\boxed{50\%}"), answer="50"),
    dict(env=MATH, name="assignment", completion=a(r"\boxed{x=5}"), answer="5"),
    dict(env=MATH, name="bare answer", completion=a("The answer is 5"), answer="5"),
    dict(env=MATH, name="power", completion=a(r"\boxed{2^{10}}"), answer="1024"),
    dict(env=MATH, name="negative fraction", completion=a(r"\boxed{-\frac{1}{2}}"), answer="-.5"),
    dict(env=MATH, name="text answer", completion=a(r"\boxed{\text{(A)}}"), answer="(A)"),
    dict(env=MATH, name="infinity", completion=a(r"\boxed{\infty}"), answer=r"\infty"),
    dict(env=MATH, name="variable over number", completion=a(r"\boxed{\frac{a}{3}}"), answer=r"\frac{a}{3}"),
    # reverse-text: XMLParser(["reversed_text"]).parse_answer + difflib ratio.
    dict(env=RT, name="exact", completion=a("<reversed_text>\n.olleh\n</reversed_text>"), answer=".olleh"),
    dict(env=RT, name="two tags: first counts", completion=a("<reversed_text>.olleh</reversed_text> or <reversed_text>olleh</reversed_text>"), answer="olleh"),
    dict(env=RT, name="tag inside think", completion=a("<think><reversed_text>draft</reversed_text></think><reversed_text>olleh</reversed_text>"), answer="olleh"),
    dict(env=RT, name="no tag", completion=a("olleh"), answer="olleh"),
    dict(env=RT, name="partial", completion=a("<reversed_text>olle</reversed_text>"), answer="olleh"),
    dict(env=RT, name="unclosed tag", completion=a("<reversed_text>olleh"), answer="olleh"),
    dict(env=RT, name="unicode", completion=a("<reversed_text>ätöü</reversed_text>"), answer="ätüö"),
]

# alphabet-sort: the environment's weighted_reward over the turns in info.
ONE = {"num_turns": 1, "ground_truths": [["AdaLovelace", "AlanTuring", "GraceHopper"]],
       "turn_names": [["GraceHopper", "AlanTuring", "AdaLovelace"]], "follow_ups": [], "sort_by_first": True}
TWO = {"num_turns": 2,
       "ground_truths": [["AlanTuring", "GraceHopper"], ["EdsgerDijkstra // new name!", "GraceHopper", "AlanTuring"]],
       "turn_names": [["AlanTuring", "GraceHopper"], ["EdsgerDijkstra"]],
       "follow_ups": ["Now sort ALL of these names alphabetically by LAST name: EdsgerDijkstra"], "sort_by_first": False}
AS = "alphabet-sort"
CASES += [
    dict(env=AS, name="one turn exact", completion=a("<alphabetical_sorted>\nAdaLovelace\nAlanTuring\nGraceHopper\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="one turn swapped", completion=a("<alphabetical_sorted>\nAlanTuring\nAdaLovelace\nGraceHopper\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="one turn case and spaces", completion=a("<alphabetical_sorted>\n  adalovelace \nALANTURING\n\nGraceHopper</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="one turn no tag", completion=a("AdaLovelace\nAlanTuring\nGraceHopper"), info=ONE),
    dict(env=AS, name="two attempts improving", completion=a("<alphabetical_sorted>\nGraceHopper\n</alphabetical_sorted> fix: <alphabetical_sorted>\nAdaLovelace\nAlanTuring\nGraceHopper\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="two attempts worse", completion=a("<alphabetical_sorted>\nAdaLovelace\nAlanTuring\nGraceHopper\n</alphabetical_sorted> or <alphabetical_sorted>\nGraceHopper\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="power on average", args={"power_per_turn": False}, completion=a("<alphabetical_sorted>\nAlanTuring\nAdaLovelace\nGraceHopper\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="two turns", completion=chat("<alphabetical_sorted>\nAlanTuring\nGraceHopper\n</alphabetical_sorted>", TWO["follow_ups"][0],
                                                 "<combined_alphabetical_sorted>\nEdsgerDijkstra // new name!\nGraceHopper\nAlanTuring\n</combined_alphabetical_sorted>"), info=TWO),
    dict(env=AS, name="two turns, second untagged", completion=chat("<alphabetical_sorted>\nAlanTuring\nGraceHopper\n</alphabetical_sorted>", TWO["follow_ups"][0],
                                                                 "<alphabetical_sorted>\nEdsgerDijkstra\nGraceHopper\nAlanTuring\n</alphabetical_sorted>"), info=TWO),
    dict(env=AS, name="two turns, one answered", completion=a("<alphabetical_sorted>\nAlanTuring\nGraceHopper\n</alphabetical_sorted>"), info=TWO),
]

# wordle: the four reward functions; the game's replies come from TextArena.
W = "wordle"
CASES += [
    dict(env=W, name="solved on guess two", answer="crane", wordle_turns=[
        "Let me start.\n<guess>[slate]</guess>", "<guess>[crane]</guess>"]),
    dict(env=W, name="unsolved, partial", answer="crane", wordle_turns=[
        "<guess>[trace]</guess>", "Hmm.\n<guess>[brace]</guess>"]),
    dict(env=W, name="two guesses in one turn: first counts", answer="crane", wordle_turns=[
        "<guess>[crane]</guess> or maybe <guess>[slate]</guess>"]),
    dict(env=W, name="guess without brackets", answer="crane", wordle_turns=[
        "<guess>crane</guess>"]),
    dict(env=W, name="no guess tag, then a guess", answer="crane", wordle_turns=[
        "I think it is [slate].", "<guess>[slate]</guess>", "<guess>[crane]</guess>"]),
    dict(env=W, name="not a word", answer="crane", wordle_turns=[
        "<guess>[xqzvb]</guess>", "<guess>[crane]</guess>"]),
    dict(env=W, name="two invalid moves end the game", answer="crane", wordle_turns=[
        "<guess>[cat]</guess>", "<guess>[dog]</guess>"]),
    dict(env=W, name="six misses", answer="crane", wordle_turns=[
        "<guess>[slate]</guess>", "<guess>[moist]</guess>", "<guess>[pouch]</guess>",
        "<guess>[dizzy]</guess>", "<guess>[fjord]</guess>", "<guess>[graze]</guess>"]),
    dict(env=W, name="format: tag in the middle", answer="crane", wordle_turns=[
        "I pick <guess>[slate]</guess> now", "<guess>\n[crane]\n</guess>"]),
]
