"""BERT's uncased WordPiece tokenizer in plain Python, for the int8 all-MiniLM-L6-v2.

remem[embed] installs no `tokenizers`: that package brings huggingface-hub and its own
dependencies (about 40 MB of the 250 an install may take, issue 36). This is the same
tokenizer as the `BertNormalizer`, `BertPreTokenizer`, `WordPiece` and `[CLS] $A [SEP]`
pipeline of all-MiniLM-L6-v2's `tokenizer.json`, rule for rule:

1. clean: drop NUL, U+FFFD and control characters (Unicode categories Cc, Cf, Co and
   Cs, but not tab, newline or carriage return; unassigned code points stay); every
   whitespace character becomes a space;
2. pad CJK ideographs with spaces, so each is a word of its own;
3. strip accents (NFD, then drop the nonspacing marks, Mn) and lowercase;
4. split on whitespace, and make each punctuation character (ASCII punctuation, or
   a Unicode P* category) a word of its own;
5. WordPiece each word: longest vocabulary match first, continuations prefixed "##";
   a word of more than `MAX_WORD_CHARS` characters, or one that does not split into
   vocabulary pieces, is `[UNK]`;
6. keep the first `max_tokens - 2` pieces, between `[CLS]` and `[SEP]`.

Over LoCoMo's and PrefEval's development texts (18,176) and the tests' hard cases it
gives the ids `tokenizers` 0.23 gives from `tokenizer.json`. Over every code point it
differs on about 500 only, all of them ones Unicode assigned or recategorised after
the tables `tokenizers` was built with (Python's `unicodedata` knows them: for example
U+061D, an Arabic punctuation mark, is a word of its own here and part of a word there).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_WORD_CHARS = 100

_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),  # sic: tokenizers' range (BERT's own starts at 0x2B820)
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_KEEP = frozenset("\t\n\r")
_CONTROL = frozenset(("Cc", "Cf", "Co", "Cs"))  # not Cn: unassigned code points are kept


@dataclass(frozen=True)
class Encoding:
    """One text's token ids (the shape `tokenizers` returns, as far as remem reads it)."""

    ids: list[int]


class WordPiece:
    """The tokenizer over one `vocab.txt` (one token a line, the line number its id)."""

    def __init__(self, vocab: Path, max_tokens: int) -> None:
        """Read the vocabulary; texts are cut to `max_tokens` ids, [CLS] and [SEP] included."""
        lines = vocab.read_text(encoding="utf-8").splitlines()
        self._ids = {token.rstrip(): i for i, token in enumerate(lines)}
        self._unk = self._ids["[UNK]"]
        self._cls = self._ids["[CLS]"]
        self._sep = self._ids["[SEP]"]
        self._room = max_tokens - 2

    def encode(self, text: str) -> Encoding:
        """The ids of one text: [CLS], its first `max_tokens - 2` pieces, [SEP]."""
        ids: list[int] = []
        for word in _words(_normalise(text)):
            ids.extend(self._pieces(word))
            if len(ids) >= self._room:
                break
        return Encoding([self._cls, *ids[: self._room], self._sep])

    def encode_batch(self, texts: Sequence[str]) -> list[Encoding]:
        """`encode` of each text, in order."""
        return [self.encode(t) for t in texts]

    def _pieces(self, word: str) -> list[int]:
        if len(word) > MAX_WORD_CHARS:
            return [self._unk]
        out: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self._ids.get(piece)
                if found is not None:
                    out.append(found)
                    break
                end -= 1
            else:
                return [self._unk]
            start = end
        return out


def _normalise(text: str) -> str:
    """Steps 1-3 of the module docstring."""
    out: list[str] = []
    for ch in text:
        code = ord(ch)
        if code == 0 or code == 0xFFFD:
            continue
        if ch in _KEEP or ch.isspace():
            if ch in _KEEP or unicodedata.category(ch) not in _CONTROL:
                out.append(" ")
            continue
        if unicodedata.category(ch) in _CONTROL:
            continue
        if any(lo <= code <= hi for lo, hi in _CJK):
            out.append(f" {ch} ")
        else:
            out.append(ch)
    stripped = unicodedata.normalize("NFD", "".join(out))
    # character by character: str.lower() would make a word-final sigma "ς"
    return "".join(c.lower() for c in stripped if unicodedata.category(c) != "Mn")


def _words(text: str) -> list[str]:
    """Step 4: whitespace-separated words with each punctuation character apart."""
    words: list[str] = []
    for chunk in text.split():
        current: list[str] = []
        for ch in chunk:
            if ch in _ASCII_PUNCT or unicodedata.category(ch).startswith("P"):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(ch)
            else:
                current.append(ch)
        if current:
            words.append("".join(current))
    return words
