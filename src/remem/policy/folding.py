"""Folding text before it is judged: one reading of the letters a person sees.

A look-alike spelling must not pass where the plain one is caught, nor become a
second name where the plain one is taken:

- `fold` is what the secret detectors read: each character in NFKC (full-width
  digits are ASCII digits, the ligature "\\ufb01" is "fi", a no-break space is a
  space), any other decimal digit as its ASCII digit (Arabic-Indic "\\u0664" is
  "4"), and format characters (Unicode category Cf: zero-width spaces and joiners,
  direction marks, a soft hyphen, a byte-order mark) dropped, so "pass\\u200bword"
  reads "password". A `Folded` text maps each span of its own back to the
  original, so a redaction covers what was written.
- `format_chars` finds the format characters a name must not hold, and
  `mixed_script_word` a word whose letters come from scripts no language writes
  together ("h\\u043eme", with a Cyrillic "o"): both make two names that read alike.

Scripts are read from each letter's Unicode name (its first word: LATIN,
CYRILLIC, GREEK, ...). A word may mix the scripts one language writes together:
Han with Hiragana and Katakana (Japanese), with Hangul (Korean) or with Bopomofo,
and any of these with Latin (UTS #39's "highly restrictive" sets). Digits, marks
and punctuation belong to no script.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass

_WORD = re.compile(r"[^\W\d_]+")

# Scripts one word may combine: UTS #39 "highly restrictive" (Latin with one CJK set)
_TOGETHER: tuple[frozenset[str], ...] = (
    frozenset({"LATIN", "CJK", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "CJK", "BOPOMOFO"}),
    frozenset({"LATIN", "CJK", "HANGUL"}),
)
# first words of letter names that name no script
_NO_SCRIPT = frozenset({"MODIFIER", "KATAKANA-HIRAGANA", "FULLWIDTH", "HALFWIDTH", ""})


@dataclass(frozen=True, slots=True)
class Folded:
    """A folded text and the way back: segment k starts at `starts[k]` in the folded
    text and at `origins[k]` in the original; an `exact` segment is a run of characters
    kept as they were, any other is the folding of the one character at its origin."""

    text: str
    starts: tuple[int, ...] = (0,)
    origins: tuple[int, ...] = (0,)
    exact: tuple[bool, ...] = (True,)

    def origin(self, pos: int) -> int:
        """Where the character at `pos` of the folded text was written."""
        k = bisect.bisect_right(self.starts, pos) - 1
        return self.origins[k] + (pos - self.starts[k] if self.exact[k] else 0)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span a non-empty span of the folded text came from."""
        return self.origin(start), self.origin(end - 1) + 1


def _fold_char(c: str) -> str:
    if unicodedata.category(c) == "Cf":
        return ""
    if c.isdecimal():
        return str(unicodedata.decimal(c))
    return unicodedata.normalize("NFKC", c)


def fold(text: str) -> Folded:
    """`text` as the detectors read it (see the module's docstring), with its way back.

    ASCII text, and text none of whose characters fold, is its own folding. Each
    distinct character is folded once (one character's NFKC), the text translated at
    once, and segments kept only around the characters that fold to another length (a
    format character dropped, a ligature or "\\u2474" expanded): linear in the text,
    with work per character only for those.
    """
    if text.isascii():
        return Folded(text)
    table: dict[int, str] = {}
    for c in set(text):
        if not c.isascii() and (folded := _fold_char(c)) != c:
            table[ord(c)] = folded
    if not table:
        return Folded(text)
    out = text.translate(table)
    resized = "".join(chr(k) for k, v in table.items() if len(v) != 1)
    if not resized:
        return Folded(out)  # one character for one: every position stays
    starts: list[int] = []
    origins: list[int] = []
    exact: list[bool] = []
    size = 0  # where the folded text is at `last` of the original
    last = 0
    for m in re.finditer(f"[{re.escape(resized)}]", text):
        at = m.start()
        if at > last:
            starts.append(size)
            origins.append(last)
            exact.append(True)
            size += at - last
        folded = table[ord(text[at])]
        if folded:
            starts.append(size)
            origins.append(at)
            exact.append(False)
            size += len(folded)
        last = at + 1
    if last < len(text):
        starts.append(size)
        origins.append(last)
        exact.append(True)
    if not starts:
        return Folded("")
    return Folded(out, tuple(starts), tuple(origins), tuple(exact))


def drop_format(text: str) -> str:
    """`text` without its format characters (category Cf)."""
    if text.isascii():
        return text
    return "".join(c for c in text if c.isascii() or unicodedata.category(c) != "Cf")


def format_chars(text: str) -> list[tuple[int, str]]:
    """The format characters (category Cf) of `text`, with their positions."""
    if text.isascii():
        return []
    return [(i, c) for i, c in enumerate(text) if unicodedata.category(c) == "Cf"]


def _script(letter: str) -> str:
    first = unicodedata.name(letter, "").split(" ", 1)[0]
    return "" if first in _NO_SCRIPT else first


def mixed_script_word(text: str) -> tuple[str, tuple[str, ...]] | None:
    """The first word of `text` whose letters come from scripts no language writes
    together in one word, with those scripts (sorted, lower-case); None when there is
    none (see the module's docstring)."""
    if text.isascii():
        return None
    for m in _WORD.finditer(text):
        word = m.group()
        if word.isascii():
            continue
        scripts = {_script(c) for c in word} - {""}
        if len(scripts) > 1 and not any(scripts <= ok for ok in _TOGETHER):
            return word, tuple(sorted(s.lower() for s in scripts))
    return None
