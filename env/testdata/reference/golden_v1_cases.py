"""The hand-made completions of env/testdata/verifiers_v1_golden.jsonl:
cases for verifiers a60a606's v1 tasksets of gsm8k, reverse-text and
alphabet-sort (verifiers_v1_golden.py scores them with the tasksets' own
reward methods). Each case names the grpo environment, its args (the
taskset's task config of the same names), the completion as chat
messages, and the task's answer or info. Edge cases are the point: where
v1 and v0 part (#### vs \\boxed{}, the last reply only, an unclosed
<think>), white space, several answers, unicode, empty completions."""


def a(*turns):
    return [{"role": "assistant", "content": t} for t in turns]


def chat(*turns):
    return [{"role": "assistant" if i % 2 == 0 else "user", "content": t} for i, t in enumerate(turns)]


GSM = "gsm8k"
CASES = [
    # gsm8k: the last reply's last "####\s*(.+)" (else the whole reply),
    # boxed and math-verified against the boxed gold.
    dict(env=GSM, name="hash answer", completion=a("3 + 15 = 18\n#### 18"), answer="18"),
    dict(env=GSM, name="hash answer no space", completion=a("####18"), answer="18"),
    dict(env=GSM, name="hash answer trailing white space", completion=a("so\n#### 18  \n\n"), answer="18"),
    dict(env=GSM, name="hash then newline", completion=a("####\n18"), answer="18"),
    dict(env=GSM, name="hash with nothing after", completion=a("The answer is 18\n#### "), answer="18"),
    dict(env=GSM, name="last hash counts", completion=a("#### 17\nno wait\n#### 18"), answer="18"),
    dict(env=GSM, name="first hash right, last wrong", completion=a("#### 18\n#### 17"), answer="18"),
    dict(env=GSM, name="hash then prose on its line", completion=a("#### 18 dollars in total"), answer="18"),
    dict(env=GSM, name="hash dollar", completion=a("#### $18"), answer="18"),
    dict(env=GSM, name="hash thousands", completion=a("#### 1,800"), answer="1800"),
    dict(env=GSM, name="hash decimal", completion=a("#### 18.00"), answer="18"),
    dict(env=GSM, name="hash fraction", completion=a("#### 36/2"), answer="18"),
    dict(env=GSM, name="hash negative", completion=a("#### -7"), answer="-7"),
    dict(env=GSM, name="hash percent", completion=a("#### 18%"), answer="18"),
    dict(env=GSM, name="hash wrong", completion=a("#### 19"), answer="18"),
    dict(env=GSM, name="boxed only", completion=a(r"So \boxed{18}"), answer="18"),
    dict(env=GSM, name="boxed only, bare", completion=a(r"\boxed{18}"), answer="18"),
    dict(env=GSM, name="box and hash disagree", completion=a("\\boxed{17}\n#### 18"), answer="18"),
    dict(env=GSM, name="bare answer sentence", completion=a("The answer is 18."), answer="18"),
    dict(env=GSM, name="bare number", completion=a("18"), answer="18"),
    dict(env=GSM, name="bare number, wrong", completion=a("17"), answer="18"),
    dict(env=GSM, name="unclosed think then hash", completion=a("<think>so it is\n#### 18"), answer="18"),
    dict(env=GSM, name="hash in think, other after", completion=a("<think>#### 18</think>\n#### 17"), answer="18"),
    dict(env=GSM, name="hash only in think", completion=a("<think>#### 17</think>\nThe answer is 18"), answer="18"),
    dict(env=GSM, name="last reply only", completion=chat("#### 18", "are you sure?", "#### 19"), answer="18"),
    dict(env=GSM, name="last reply only, right", completion=chat("#### 19", "are you sure?", "#### 18"), answer="18"),
    dict(env=GSM, name="empty completion", completion=a(""), answer="18"),
    dict(env=GSM, name="no assistant turn", completion=[], answer="18"),
    dict(env=GSM, name="full-width digits", completion=a("#### １８"), answer="18"),
    dict(env=GSM, name="large gold", completion=a("#### 1000000"), answer="1000000"),
]

RT = "reverse-text"
CASES += [
    # reverse-text: the first <reversed_text>(.*?)</reversed_text> of the last
    # reply, stripped ("" without one), difflib ratio to the answer.
    dict(env=RT, name="exact", completion=a("<reversed_text>\n.olleh\n</reversed_text>"), answer=".olleh"),
    dict(env=RT, name="two tags: first counts", completion=a("<reversed_text>.olleh</reversed_text> or <reversed_text>olleh</reversed_text>"), answer="olleh"),
    dict(env=RT, name="tag inside think", completion=a("<think><reversed_text>draft</reversed_text></think><reversed_text>olleh</reversed_text>"), answer="olleh"),
    dict(env=RT, name="unclosed think", completion=a("<think>hmm <reversed_text>olleh</reversed_text>"), answer="olleh"),
    dict(env=RT, name="no tag", completion=a("olleh"), answer="olleh"),
    dict(env=RT, name="partial", completion=a("<reversed_text>olle</reversed_text>"), answer="olleh"),
    dict(env=RT, name="unclosed tag", completion=a("<reversed_text>olleh"), answer="olleh"),
    dict(env=RT, name="nested open tag", completion=a("<reversed_text>a<reversed_text>olleh</reversed_text>"), answer="olleh"),
    dict(env=RT, name="inner white space kept", completion=a("<reversed_text>  ol  leh \t</reversed_text>"), answer="olleh"),
    dict(env=RT, name="unicode", completion=a("<reversed_text>ätöü</reversed_text>"), answer="ätüö"),
    dict(env=RT, name="emoji and combining", completion=a("<reversed_text>🙂e\u0301x</reversed_text>"), answer="x\u0301e🙂"),
    dict(env=RT, name="empty tag", completion=a("<reversed_text></reversed_text>"), answer="olleh"),
    dict(env=RT, name="empty tag, empty answer", completion=a("<reversed_text> </reversed_text>"), answer=""),
    dict(env=RT, name="no tag, empty answer", completion=a("nothing"), answer=""),
    dict(env=RT, name="empty completion", completion=a(""), answer="olleh"),
    dict(env=RT, name="upper-case tag not read", completion=a("<REVERSED_TEXT>olleh</REVERSED_TEXT>"), answer="olleh"),
    dict(env=RT, name="last reply only", completion=chat("<reversed_text>olleh</reversed_text>", "again", "no"), answer="olleh"),
    dict(env=RT, name="long", completion=a("<reversed_text>.god yzal eht revo spmuj xof nworb kciuq ehT</reversed_text>"), answer=".god yzal eht revo spmuj xof nworb kciuq ehT"),
]

AS = "alphabet-sort"
ONE = {"num_turns": 1, "ground_truths": [["AdaLovelace", "AlanTuring", "GraceHopper"]],
       "user_turns": ["Sort these names in alphabetical order by FIRST name: GraceHopper, AlanTuring, AdaLovelace"]}
TWO = {"num_turns": 2,
       "ground_truths": [["AlanTuring", "GraceHopper"], ["EdsgerDijkstra // new name!", "GraceHopper", "AlanTuring"]],
       "user_turns": ["Sort these names in alphabetical order by LAST name: GraceHopper, AlanTuring",
                      "Now sort ALL of these names alphabetically by LAST name: EdsgerDijkstra"]}
UNI = {"num_turns": 1, "ground_truths": [["ÁngelaÖzil", "ÉmileZola", "JoséÁlvarez"]],
       "user_turns": ["Sort these names in alphabetical order by FIRST name: JoséÁlvarez, ÉmileZola, ÁngelaÖzil"]}
S1 = "<alphabetical_sorted>\nAlanTuring\nGraceHopper\n</alphabetical_sorted>"
S2 = "<combined_alphabetical_sorted>\nEdsgerDijkstra // new name!\nGraceHopper\nAlanTuring\n</combined_alphabetical_sorted>"
CASES += [
    # alphabet-sort: per turn, the tagged attempts of that assistant message
    # (lines stripped, lower-cased) by difflib ratio, power-scaled.
    dict(env=AS, name="one turn exact", completion=a("<alphabetical_sorted>\nAdaLovelace\nAlanTuring\nGraceHopper\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="one turn swapped", completion=a("<alphabetical_sorted>\nAlanTuring\nAdaLovelace\nGraceHopper\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="one turn case and spaces", completion=a("<alphabetical_sorted>\n  adalovelace \nALANTURING\n\n\tGraceHopper</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="one turn no tag", completion=a("AdaLovelace\nAlanTuring\nGraceHopper"), info=ONE),
    dict(env=AS, name="one turn empty tag", completion=a("<alphabetical_sorted>\n\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="two attempts improving", completion=a("<alphabetical_sorted>\nGraceHopper\n</alphabetical_sorted> fix: <alphabetical_sorted>\nAdaLovelace\nAlanTuring\nGraceHopper\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="two attempts worse", completion=a("<alphabetical_sorted>\nAdaLovelace\nAlanTuring\nGraceHopper\n</alphabetical_sorted> or <alphabetical_sorted>\nGraceHopper\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="two equal attempts", completion=a("<alphabetical_sorted>\nAlanTuring\n</alphabetical_sorted><alphabetical_sorted>\nAlanTuring\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="three attempts improving", completion=a("<alphabetical_sorted>GraceHopper</alphabetical_sorted><alphabetical_sorted>AlanTuring\nGraceHopper</alphabetical_sorted><alphabetical_sorted>AdaLovelace\nAlanTuring\nGraceHopper</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="power on average", args={"power_per_turn": False}, completion=a("<alphabetical_sorted>\nAlanTuring\nAdaLovelace\nGraceHopper\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="power 2", args={"similarity_power": 2}, completion=a("<alphabetical_sorted>\nAlanTuring\nAdaLovelace\nGraceHopper\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="unclosed think before tag", completion=a("<think>let me sort <alphabetical_sorted>\nAdaLovelace\nAlanTuring\nGraceHopper\n</alphabetical_sorted>"), info=ONE),
    dict(env=AS, name="unicode names", completion=a("<alphabetical_sorted>\náNGELAöZIL\nÉmileZola\nJoséÁlvarez\n</alphabetical_sorted>"), info=UNI),
    dict(env=AS, name="unicode names swapped", completion=a("<alphabetical_sorted>\nJoséÁlvarez\nÁngelaÖzil\nÉmileZola\n</alphabetical_sorted>"), info=UNI),
    dict(env=AS, name="two turns", completion=chat(S1, TWO["user_turns"][1], S2), info=TWO),
    dict(env=AS, name="two turns, marker missing", completion=chat(S1, TWO["user_turns"][1], S2.replace(" // new name!", "")), info=TWO),
    dict(env=AS, name="two turns, second untagged", completion=chat(S1, TWO["user_turns"][1], S1.replace("GraceHopper", "EdsgerDijkstra\nGraceHopper")), info=TWO),
    dict(env=AS, name="two turns, one answered", completion=a(S1), info=TWO),
    dict(env=AS, name="two turns, answers swapped", completion=chat(S2, TWO["user_turns"][1], S1), info=TWO),
    dict(env=AS, name="two turns, power on average", args={"power_per_turn": False}, completion=chat(S1, TWO["user_turns"][1], S2.replace("GraceHopper\nAlanTuring", "AlanTuring\nGraceHopper")), info=TWO),
    dict(env=AS, name="extra turn ignored", completion=chat(S1, TWO["user_turns"][1], S2, "thanks", "bye"), info=TWO),
    dict(env=AS, name="empty completion", completion=a(""), info=TWO),
]
