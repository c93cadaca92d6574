#!/usr/bin/env python3
"""Write testdata/rubric/difflib_pairs.jsonl.gz: string pairs with CPython's
difflib.SequenceMatcher(None, a, b).ratio(), the reference for rubric.Ratio.

Usage (from the repository root, any CPython >= 3.9 with the standard library):

    python3 scripts/difflib_golden.py [path/to/gsm8k/train.jsonl]

The output is deterministic (fixed seed, gzip mtime 0), so re-running it on the
same Python gives a byte-identical file. Each line is one JSON object
{"kind": ..., "a": ..., "b": ..., "ratio": <float repr>}; Python's json module
writes floats with repr(), which round-trips exactly through Go's ParseFloat.

The gsm8k lines (MIT licence, see testdata/rubric/LICENSE-gsm8k) are copied
into the pairs, so the Go test needs neither Python nor /work/shared.
"""

import difflib
import gzip
import io
import json
import os
import random
import sys

SEED = 20250611
OUT = os.path.join("testdata", "rubric", "difflib_pairs.jsonl.gz")
DEFAULT_GSM8K = "/work/shared/data/gsm8k/train.jsonl"

ALPHABETS = {
    "ab": "ab",
    "acgt": "ACGT",
    "lower": "abcdefghijklmnopqrstuvwxyz",
    "printable": "".join(chr(c) for c in range(32, 127)),
    "words": "the quick brown fox jumps over a lazy dog ",
}
# Code points outside ASCII: CJK, astral-plane emoji (two UTF-16 units, one
# Python code point), combining marks, Greek/Cyrillic. No surrogates: a Python
# str may hold them but a Go string cannot.
UNICODE_POOL = (
    "你好世界中文字符测试数据的是了在有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处府研"
    "😀😃🎉🚀👍🏽❤️🇫🇷🧪"
    "éèêëàâäôöùûüçñ"
    "e\u0301a\u0300o\u0308n\u0303\u0327\u0323"
    "αβγδεζηθλμπσω"
    "абвгдежзийклмнопрст"
)


def ratio(a, b):
    return difflib.SequenceMatcher(None, a, b).ratio()


def rand_string(rng, alphabet, n):
    return "".join(rng.choice(alphabet) for _ in range(n))


def mutate(rng, s, alphabet, edits):
    """Apply `edits` random insertions, deletions and substitutions."""
    chars = list(s)
    for _ in range(edits):
        op = rng.randrange(3)
        if op == 0 or not chars:
            chars.insert(rng.randrange(len(chars) + 1), rng.choice(alphabet))
        elif op == 1:
            del chars[rng.randrange(len(chars))]
        else:
            chars[rng.randrange(len(chars))] = rng.choice(alphabet)
    return "".join(chars)


def rand_length(rng):
    """Lengths 0..2000, with many around and above autojunk's 200 threshold."""
    r = rng.random()
    if r < 0.25:
        return rng.randint(0, 60)
    if r < 0.45:
        return rng.randint(190, 210)
    if r < 0.8:
        return rng.randint(200, 700)
    return rng.randint(700, 2000)


def load_gsm8k(path, rng, count):
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    picked = rng.sample(rows, count)
    return [(r["question"], r["answer"]) for r in picked]


def pairs(rng, gsm8k):
    # Edge cases first: empty strings, identity, the autojunk threshold.
    yield "edge", "", ""
    yield "edge", "", "abc"
    yield "edge", "abc", ""
    yield "edge", "abc", "abc"
    for n in (199, 200, 201, 299, 300, 301):
        for extra in (-1, 0, 1):
            # b has n chars; 'x' occurs exactly n//100 + 1 + extra times, on the
            # popular/non-popular boundary.
            k = n // 100 + 1 + extra
            b = list(rand_string(rng, ALPHABETS["lower"].replace("x", ""), n - k))
            for _ in range(k):
                b.insert(rng.randrange(len(b) + 1), "x")
            b = "".join(b)
            a = mutate(rng, b, "xyz", rng.randint(1, 20))
            yield "threshold", a, b
            yield "threshold", b, a

    for name, alphabet in ALPHABETS.items():
        for _ in range(400):
            a = rand_string(rng, alphabet, rand_length(rng))
            if rng.random() < 0.5:
                b = mutate(rng, a, alphabet, rng.randint(0, max(1, len(a) // 5)))
            else:
                b = rand_string(rng, alphabet, rand_length(rng))
            yield "random-" + name, a, b

    for _ in range(400):
        a = rand_string(rng, UNICODE_POOL, rand_length(rng) // 2)
        b = mutate(rng, a, UNICODE_POOL, rng.randint(0, 30))
        if rng.random() < 0.3:
            b = b[::-1]
        yield "unicode", a, b

    for q, ans in gsm8k:
        r = rng.random()
        if r < 0.25:
            yield "gsm8k-qa", q, ans
        elif r < 0.5:
            yield "gsm8k-reversed", q[::-1], mutate(rng, q, ALPHABETS["lower"], rng.randint(0, 10))
        elif r < 0.75:
            yield "gsm8k-edit", ans, mutate(rng, ans, ALPHABETS["printable"], rng.randint(0, 40))
        else:
            # Long real text (often > 1000 chars) with a different tail.
            a = q + "\n" + ans
            yield "gsm8k-long", a, a[: len(a) // 2] + ans[::-1] + q

    # Reversal is the reverse-text environment's reward.
    for q, _ in gsm8k[:200]:
        yield "reverse", q, q[::-1]


def main():
    gsm8k_path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_GSM8K
    rng = random.Random(SEED)
    gsm8k = load_gsm8k(gsm8k_path, rng, 800)
    buf = io.BytesIO()
    n = 0
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        for kind, a, b in pairs(rng, gsm8k):
            line = json.dumps({"kind": kind, "a": a, "b": b, "ratio": ratio(a, b)}, ensure_ascii=False)
            gz.write(line.encode("utf-8") + b"\n")
            n += 1
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "wb") as f:
        f.write(buf.getvalue())
    print(f"{OUT}: {n} pairs, {len(buf.getvalue())} bytes, Python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
