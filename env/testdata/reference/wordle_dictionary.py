#!/usr/bin/env python3
"""Regenerates env/wordle/dictionary.txt: the five-letter words that
TextArena's Wordle-v0 (548413a04) accepts as guesses, from its own
EnglishDictionary (the en_GB and en_US hunspell lists it bundles, expanded
with their affix rules by its own code). NLTK's "words" corpus, which
TextArena also consults, is not on this machine and is left out.

    TEXTARENA=... python3 wordle_dictionary.py > ../../wordle/dictionary.txt
"""
import importlib
import os
import sys
import types

TA = os.environ["TEXTARENA"]
nltk = types.ModuleType("nltk")
nltk.download = lambda *a, **k: True
corpus = types.ModuleType("nltk.corpus")
corpus.words = types.SimpleNamespace(words=lambda kind="en": [])
nltk.corpus = corpus
sys.modules["nltk"], sys.modules["nltk.corpus"] = nltk, corpus
for name, path in [("textarena", ""), ("textarena.envs", "envs")]:
    m = types.ModuleType(name)
    m.__path__ = [os.path.join(TA, "textarena", path)]
    sys.modules[name] = m
word_lists = importlib.import_module("textarena.envs.utils.word_lists")
d = word_lists.EnglishDictionary(keep_proper_nouns=False, include_nltk=False)
# Wordle lower-cases a guess and checks it against these sets.
words = sorted(w for w in d.uk_words | d.us_words if len(w) == 5 and w.isascii() and w.isalpha() and w.islower())
print("\n".join(words))
