#!/usr/bin/env python3
"""Write testdata/tokenizer/gptoss/tiny/: a model directory laid out as
gpt-oss's (tokenizer.json, tokenizer_config.json, chat_template.jinja,
generation_config.json) with a tiny byte-level vocabulary and harmony's
special tokens, so tests can load a gpt-oss-style tokenizer without its
200k-token file.

Usage (from the repository root, standard library only):

    python3 scripts/chat-goldens/gptoss_tiny_tokenizer.py

The special tokens keep o200k_harmony's order and gaps, moved down from
199998 to 256 (so <|return|> is 260 for 200002, <|call|> 270 for 200012).
tokenizer_config.json names <|return|> the eos token and
generation_config.json lists <|return|>, <|endoftext|> and <|call|>, as the
checkpoints' files do (eos_token_id [200002, 199999, 200012]).
"""

import json
import os
import shutil

DIR = os.path.join("testdata", "tokenizer", "gptoss", "tiny")
TEMPLATE = os.path.join("testdata", "tokenizer", "gptoss", "chat_template.jinja")
O200K = "|".join([
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}", r" ?[^\s\p{L}\p{N}]+[\r\n/]*", r"\s*[\r\n]+", r"\s+(?!\S)", r"\s+"])
# id - 199998 + 256, as in o200k_harmony.
SPECIAL = {199998: "<|startoftext|>", 199999: "<|endoftext|>", 200000: "<|reserved_200000|>",
           200001: "<|reserved_200001|>", 200002: "<|return|>", 200003: "<|constrain|>",
           200004: "<|reserved_200004|>", 200005: "<|channel|>", 200006: "<|start|>", 200007: "<|end|>",
           200008: "<|message|>", 200009: "<|reserved_200009|>", 200010: "<|reserved_200010|>",
           200011: "<|reserved_200011|>", 200012: "<|call|>"}


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


def tiny_id(real):
    return real - 199998 + 256


def main():
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    added = [{"id": tiny_id(i), "content": c, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, c in sorted(SPECIAL.items())]
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": O200K}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": []},
    }
    cfg = {"bos_token": "<|startoftext|>", "eos_token": "<|return|>", "pad_token": "<|endoftext|>",
           "model_max_length": 1000000000000000019884624838656, "tokenizer_class": "PreTrainedTokenizerFast"}
    gen = {"bos_token_id": tiny_id(199998), "do_sample": True,
           "eos_token_id": [tiny_id(200002), tiny_id(199999), tiny_id(200012)], "pad_token_id": tiny_id(199999)}
    os.makedirs(DIR, exist_ok=True)
    for name, obj in [("tokenizer.json", tok), ("tokenizer_config.json", cfg), ("generation_config.json", gen)]:
        with open(os.path.join(DIR, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=1)
            f.write("\n")
    shutil.copyfile(TEMPLATE, os.path.join(DIR, "chat_template.jinja"))


if __name__ == "__main__":
    main()
