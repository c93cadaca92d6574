#!/usr/bin/env python3
"""Write testdata/tokenizer/qwen35/tiny/: a model directory laid out as
Qwen3.5's (tokenizer.json, tokenizer_config.json without a chat_template,
chat_template.jinja beside them) with a tiny byte-level vocabulary, so tests
can load a Qwen3.5-style tokenizer without its 248k-token file.

Usage (from the repository root, standard library only):

    python3 scripts/chat-goldens/qwen35_tiny_tokenizer.py

tokenizer.json has Qwen3.5's pipeline: NFC, then Split with Qwen3.5's
pattern (letters absorb combining marks), then ByteLevel without its own
regex. The vocabulary is the 256 byte tokens, a few merges that join a letter
with a combining acute (so whether the pre-tokenizer keeps "q\u0301" in one
piece decides the ids), and Qwen's chat special tokens.
"""

import json
import os
import shutil

DIR = os.path.join("testdata", "tokenizer", "qwen35", "tiny")
TEMPLATE = os.path.join("testdata", "tokenizer", "qwen35", "chat_template.jinja")
QWEN35 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Not special (Qwen marks these special=false): the tool-call and think tags.
ADDED = ["<tool_call>", "</tool_call>", "<think>", "</think>"]


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def main():
    b2u = bytes_to_unicode()
    enc = lambda s: "".join(b2u[b] for b in s.encode("utf-8"))
    vocab = {b2u[b]: b for b in range(256)}
    merges = []
    for a, b in [(enc("\u0301")[0], enc("\u0301")[1]), (enc(" "), "q"), ("q", enc("\u0301")), (enc(" q"), enc("\u0301"))]:
        merges.append([a, b])
        vocab[a + b] = len(vocab)
    added = []
    for content in SPECIAL + ADDED:
        added.append({"id": len(vocab) + len(added), "content": content, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": content in SPECIAL})
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN35}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }
    cfg = {"add_bos_token": False, "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
           "model_max_length": 262144, "tokenizer_class": "Qwen2Tokenizer"}
    os.makedirs(DIR, exist_ok=True)
    for name, obj in [("tokenizer.json", tok), ("tokenizer_config.json", cfg)]:
        with open(os.path.join(DIR, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=1)
            f.write("\n")
    shutil.copyfile(TEMPLATE, os.path.join(DIR, "chat_template.jinja"))


if __name__ == "__main__":
    main()
