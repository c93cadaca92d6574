#!/usr/bin/env python3
"""Write testdata/tokenizer/glm45/tiny/: a model directory laid out as
GLM-4.5's (tokenizer.json, tokenizer_config.json, chat_template.jinja) with
a tiny byte-level vocabulary and GLM-4.5's special tokens in their order
(151329 <|endoftext|> … moved down to 256), so tests can load a
GLM-style tokenizer without its 151k-token file. There is no
generation_config.json, so the stop tokens come from grpo's own list.

Usage (from the repository root, standard library only):

    python3 scripts/chat-goldens/glm45_tiny_tokenizer.py
"""

import json
import os
import shutil

DIR = os.path.join("testdata", "tokenizer", "glm45", "tiny")
TEMPLATE = os.path.join("testdata", "tokenizer", "glm45", "chat_template.jinja")
SPECIAL = ["<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>", "<|system|>", "<|user|>",
           "<|assistant|>", "<|observation|>"]
# GLM-4.5 marks these special=false: the thinking and tool-call tags.
ADDED = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
         "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"]


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
    vocab = {b2u[b]: b for b in range(256)}
    added = [{"id": 256 + i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": c in SPECIAL} for i, c in enumerate(SPECIAL + ADDED)]
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": []},
    }
    cfg = {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "model_max_length": 128000,
           "tokenizer_class": "PreTrainedTokenizerFast"}
    os.makedirs(DIR, exist_ok=True)
    for name, obj in [("tokenizer.json", tok), ("tokenizer_config.json", cfg)]:
        with open(os.path.join(DIR, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=1)
            f.write("\n")
    shutil.copyfile(TEMPLATE, os.path.join(DIR, "chat_template.jinja"))


if __name__ == "__main__":
    main()
