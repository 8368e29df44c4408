"""What a text must hold for a pattern to match in it: the screen that lets `detect`
skip a detector cheaply.

`screen(pattern)` reads a compiled pattern's own syntax tree and returns the
literal strings ("needles") one of which every match contains, and how many
ASCII digits every match holds at least. A text holding no needle, or fewer
digits, has no match, so the pattern need not run: skipping it changes no hit.
Case-insensitive needles are looked for in the lower-cased text, which is only
exact for ASCII text (`re.IGNORECASE` also folds some other letters onto ASCII
ones, the Kelvin sign onto "k"); in any other text they count as present.

Derived from the patterns, so a detector edited later keeps a correct screen;
what the reader does not understand counts as "no needle", never as a wrong one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_MAX_SET = 64  # a needle set larger than this is cut into shorter runs
_MAX_CLASS = 10  # a character class of at most this many characters is a set of needles
_KEEP = 2  # needle sets kept per pattern: each is checked on every text
_COVER = 4  # the shortest word `_cover` looks for in place of longer needles

Needle = tuple[str, bool]  # (text, case-insensitive: then lower-cased)
Needles = frozenset[Needle]


@dataclass(frozen=True, slots=True)
class Screen:
    """What every match of one pattern holds: for each of `needles`, one of its
    lower-cased words in the lower-cased text or one of its exact words in the text
    (no sets: nothing known); and at least `digits` ASCII digits."""

    needles: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]
    digits: int

    def passes(self, text: str, lower: str | None, digits: int) -> bool:
        """Whether the pattern may match `text`: `lower` is the text lower-cased when it
        is ASCII (else None: every folded word counts as present), `digits` its count of
        ASCII digits (`digit_count`)."""
        if digits < self.digits:
            return False
        for folded, exact in self.needles:
            if folded and lower is None:
                continue
            hit = False
            for word in folded:
                if word in lower:  # type: ignore[operator]  # not None when folded
                    hit = True
                    break
            if not hit:
                for word in exact:
                    if word in text:
                        hit = True
                        break
            if not hit:
                return False
        return True


def digit_count(text: str) -> int:
    """How many ASCII digits `text` holds."""
    return sum(map(text.count, "0123456789"))


class Sieve:
    """Many screens at once: which of them a text passes, looking for each word of their
    first needle sets once (a word belongs to every screen it appears in)."""

    def __init__(self, screens: Iterable[Screen]) -> None:
        self.screens = tuple(screens)
        folded: dict[str, set[int]] = {}
        exact: dict[str, set[int]] = {}
        always: set[int] = set()
        self._foldable: frozenset[int] = frozenset(
            i for i, s in enumerate(self.screens) if s.needles and s.needles[0][0]
        )
        for i, s in enumerate(self.screens):
            if not s.needles:
                always.add(i)
                continue
            first_folded, first_exact = s.needles[0]
            for word in first_folded:
                folded.setdefault(word, set()).add(i)
            for word in first_exact:
                exact.setdefault(word, set()).add(i)
        self._always = frozenset(always)
        self._folded = tuple((w, frozenset(i)) for w, i in folded.items())
        self._exact = tuple((w, frozenset(i)) for w, i in exact.items())

    def passed(self, text: str) -> list[int]:
        """The screens `text` passes, by their place, in order."""
        lower = text.lower() if text.isascii() else None
        maybe = set(self._always)
        for word, places in self._exact:
            if word in text:
                maybe |= places
        if lower is None:
            maybe |= self._foldable
        else:
            for word, places in self._folded:
                if word in lower:
                    maybe |= places
        if not maybe:
            return []
        digits = digit_count(text)
        return sorted(i for i in maybe if self.screens[i].passes(text, lower, digits))


def screen(pattern: re.Pattern[str], digits: int | None = None) -> Screen:
    """The needles and the least digit count of every match of `pattern` (`digits`, when
    given, is what the caller knows instead of the pattern's own count)."""
    try:
        from re import _parser  # type: ignore[attr-defined]

        tree = list(_parser.parse(pattern.pattern, pattern.flags))
    except Exception:  # another Python's parser: no screen, every text is scanned
        return Screen((), digits or 0)
    _, sets = _sequence(tree, bool(pattern.flags & re.IGNORECASE))
    return Screen(tuple(_words(s) for s in sets), _digits(tree) if digits is None else digits)


def _words(needles: Needles) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A needle set as a few folded and exact words, each a part of its needles that
    every needle holds one of (`_cover`): fewer words to look for, nearly as telling."""
    folded = _cover({w for w, f in needles if f})
    exact = _cover({w for w, f in needles if not f})
    return folded, exact


def _cover(needles: set[str]) -> tuple[str, ...]:
    """Words of at least `_COVER` characters (or whole shorter needles) such that every
    needle holds one, picked greedily: the word in most needles first, then the longer."""
    left = set(needles)
    words: list[str] = []
    while left:
        parts: dict[str, int] = {}
        for needle in left:
            size = min(_COVER, len(needle))
            found = {
                needle[i : i + n]
                for n in range(size, len(needle) + 1)
                for i in range(len(needle) - n + 1)
            }
            for part in found:
                parts[part] = parts.get(part, 0) + 1
        best = max(parts, key=lambda part: (parts[part], len(part), part))
        words.append(best)
        left = {n for n in left if best not in n}
    words.sort(key=lambda w: (len(w), w))
    return tuple(w for i, w in enumerate(words) if not any(k in w for k in words[:i]))


# -- the needles: exact sets and required sets ----------------------------------------------

_EMPTY: Needles = frozenset({("", False)})


def _sequence(items: list[Any], folded: bool) -> tuple[Needles | None, list[Needles]]:
    """A sequence's exact set (every string it can match, when few) and the needle sets
    every match satisfies, the most telling first (at most `_KEEP`)."""
    found: list[Needles] = []
    run: Needles = _EMPTY  # the exact strings of the run of items so far
    whole: Needles | None = _EMPTY
    for op, arg in items:
        exact, needed, width = _item(str(op), arg, folded)
        found.extend(needed)
        if width == 0:  # an assertion: it consumes nothing, so the run goes on
            continue
        if exact is None:
            found.append(run)
            run, whole = _EMPTY, None
            continue
        joined = _join(run, exact)
        if joined is None:  # too many: the run so far is one set, this item starts anew
            found.append(run)
            joined = exact
        run = joined
        whole = None if whole is None else _join(whole, exact)
    found.append(run)
    return whole, _best(found)


def _item(op: str, arg: Any, folded: bool) -> tuple[Needles | None, list[Needles], int]:
    """One node: its exact set (or None), its needle sets, and 0 when zero-width."""
    if op == "LITERAL":
        char = _char(arg, folded)
        return (None if char is None else frozenset({char})), [], 1
    if op == "IN":
        return _class(arg, folded), [], 1
    if op in ("AT", "ASSERT_NOT"):
        return None, [], 0
    if op == "ASSERT":
        return None, _sequence(list(arg[1]), folded)[1], 0
    if op == "SUBPATTERN":
        _group, add, remove, sub = arg
        inner = (folded or bool(add & re.IGNORECASE)) and not remove & re.IGNORECASE
        exact, needed = _sequence(list(sub), inner)
        return exact, needed, 1
    if op == "ATOMIC_GROUP":  # matches a subset of what its content matches
        exact, needed = _sequence(list(arg), folded)
        return exact, needed, 1
    if op == "BRANCH":
        alternatives = [_sequence(list(sub), folded) for sub in arg[1]]
        exacts = [e for e, _ in alternatives]
        firsts = [n[0] if n else None for _, n in alternatives]
        exact = None if None in exacts else _union([e for e in exacts if e is not None])
        if None in firsts:
            return exact, [], 1
        return exact, [_fit(frozenset().union(*[n for n in firsts if n is not None]))], 1
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        low, high, sub = arg
        exact, needed = _sequence(list(sub), folded)
        if low == 0:
            return (None if exact is None or high != 1 else exact | _EMPTY), [], 1
        return (exact if low == high == 1 else None), needed, 1
    return None, [], 1  # anything else: no needle, and the run ends here


def _char(code: int, folded: bool) -> Needle | None:
    """One character as a needle; None for a folded non-ASCII one, which the regular
    expression engine may fold onto an ASCII letter ("\u0130" onto "i") as `str.lower`
    does not."""
    c = chr(code)
    if not folded:
        return c, False
    return (c.lower(), True) if c.isascii() else None


def _class(items: Iterable[tuple[Any, Any]], folded: bool) -> Needles | None:
    """A small character class of plain characters and ranges as its needles."""
    chars: set[Needle] = set()
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            codes = [arg]
        elif name == "RANGE" and arg[1] - arg[0] < _MAX_CLASS:
            codes = list(range(arg[0], arg[1] + 1))
        else:  # NEGATE, a category (\s, \w), a wide range
            return None
        for code in codes:
            char = _char(code, folded)
            if char is None:
                return None
            chars.add(char)
        if len(chars) > _MAX_CLASS:
            return None
    return frozenset(chars)


def _join(left: Needles, right: Needles) -> Needles | None:
    """Every string of `left` followed by one of `right` (None when too many)."""
    if len(left) * len(right) > _MAX_SET:
        return None
    out: set[Needle] = set()
    for a, fa in left:
        for b, fb in right:
            folded = fa or fb
            out.add(((a + b).lower() if folded else a + b, folded))
    return frozenset(out)


def _union(sets: list[Needles]) -> Needles | None:
    out: Needles = frozenset().union(*sets)
    return out if len(out) <= _MAX_SET else None


def _fit(needles: Needles) -> Needles:
    """A needle set cut to at most `_MAX_SET` needles by keeping only their beginnings
    (a text holding a needle holds its beginning too)."""
    longest = max((len(w) for w, _ in needles), default=0)
    for keep in range(longest, 0, -1):
        cut = frozenset((w[:keep], f) for w, f in needles)
        if len(cut) <= _MAX_SET:
            return cut
    return _EMPTY


def _best(sets: list[Needles]) -> list[Needles]:
    """The most telling needle sets (the longer shortest needle, then the fewer), without
    the ones any text satisfies."""
    useful = {s for s in sets if s and all(w for w, _ in s)}
    ranked = sorted(useful, key=lambda s: (-min(len(w) for w, _ in s), len(s), sorted(s)))
    return ranked[:_KEEP]


# -- the digits: how many ASCII digits every match holds --------------------------------------


def _digits(items: list[Any]) -> int:
    """The least count of ASCII digits in a match of the sequence: those it consumes,
    or those of one of its lookarounds, whichever is more (the text holds both)."""
    consumed = around = 0
    for op, arg in items:
        name = str(op)
        if name == "ASSERT":
            around = max(around, _digits(list(arg[1])))
        else:
            consumed += _item_digits(name, arg)
    return max(consumed, around)


def _item_digits(op: str, arg: Any) -> int:
    if op == "LITERAL":
        return 1 if 48 <= arg <= 57 else 0
    if op == "IN":
        return 1 if _only_digits(arg) else 0
    if op == "SUBPATTERN":
        return _digits(list(arg[3]))
    if op == "ATOMIC_GROUP":
        return _digits(list(arg))
    if op == "BRANCH":
        return min(_digits(list(sub)) for sub in arg[1])
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        return int(arg[0]) * _digits(list(arg[2]))
    return 0  # a negative lookaround, a boundary, anything else: no digit known


def _only_digits(items: Iterable[tuple[Any, Any]]) -> bool:
    for op, arg in items:
        name = str(op)
        if name == "LITERAL" and 48 <= arg <= 57:
            continue
        if name == "RANGE" and 48 <= arg[0] <= arg[1] <= 57:
            continue
        return False
    return True
