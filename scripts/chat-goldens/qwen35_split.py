#!/usr/bin/env python3
"""Write testdata/tokenizer/split-qwen35.json: how Qwen3.5's pre-tokenizer
pattern (and Qwen3's, for contrast) cuts strings with combining marks, the
reference for grpo's hand-written scanner.

Usage (from the repository root; needs the `regex` package, Debian's
python3-regex):

    python3 scripts/chat-goldens/qwen35_split.py

The patterns are the Split regexes of the models' tokenizer.json files
(Qwen3.5's as llama.cpp's llama-vocab.cpp quotes it for its "qwen35"
pre-tokenizer type). HF tokenizers runs them with Oniguruma; `regex` agrees
with Oniguruma on every class these strings exercise (\\s is White_Space,
with U+0085 and without U+FEFF; \\p{M} is Mn|Mc|Me). The strings avoid the
one known difference, case folding under (?i): `regex` folds U+017F to s,
Oniguruma as HF configures it does not. HF's Split with behavior "Isolated"
keeps every match and the text between matches as pieces.
"""

import json
import os
import sys

import regex

QWEN3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN35 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
OUT = os.path.join("testdata", "tokenizer", "split-qwen35.json")

STRINGS = [
    "cafe\u0301 au lait",          # e + combining acute (NFD)
    "q\u0301 x\u0308y",            # marks NFC cannot compose away
    " \u0301abc",                  # a mark after a space starts a word
    "a \u0301\u0302!",             # marks alone after a space
    "\u0301\u0301",                # marks at the start of text
    "1\u0301 2",                   # a mark after a digit
    "!\u0301?",                    # a mark between punctuation
    "\n\u0301x",                   # a mark after a line break
    "हिन्दी भाषा",                 # Devanagari: vowel signs (Mc) and virama (Mn)
    "नमस्ते, दुनिया!",
    "ภาษาไทย ผู้ใหญ่",             # Thai: vowel and tone marks (Mn)
    "Tiếng Việt có dấu",           # Vietnamese, precomposed
    "Tie\u0302\u0301ng Vie\u0323\u0302t", # Vietnamese, stacked combining marks
    "x\u20dd y\u20de",             # enclosing marks (Me)
    "עִבְרִית",                      # Hebrew points
    "العَرَبِيَّة",                    # Arabic harakat
    "I'm DON'T it's\u0301",        # contractions next to a mark
    "a\u0301'll",
    "12\u0301345",
    "tab\t\u0301x  \u0301\n\n y",
    "\u200d\u0301z",               # a format character, then a mark
]


def split(pattern, s):
    pieces, prev = [], 0
    for m in regex.finditer(pattern, s):
        if m.start() > prev:
            pieces.append(s[prev:m.start()])
        if m.end() > m.start():
            pieces.append(m.group())
        prev = m.end()
    if prev < len(s):
        pieces.append(s[prev:])
    return pieces


def main():
    out = [{"text": s, "qwen3": split(QWEN3, s), "qwen35": split(QWEN35, s)} for s in STRINGS]
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(out)} strings to {OUT} with regex {regex.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
