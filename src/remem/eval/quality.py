"""Write quality: mechanical checks of the records an extractor made, no I/O.

- `unknown_words`: the words of a record that appear neither in its source
  turns nor in a small list of function words and common verbs, allowing
  regular inflections, so mangled words ("Stronglies" from "I strongly
  dislike") stand out. The rule: a word (lower-cased, letters only, split at
  apostrophes) passes when it, or a base made by stripping or changing one
  common suffix (-s, -es, -ies→-y, -ed, -ied→-y, -ing, -ly, -ily→-y, with a
  dropped final e or a doubled consonant restored), equals a source word or
  a listed word, or a base made the same way from one of those. Adverbs do
  not inflect: a base reached by stripping -s, -es, -ed or -ing (or -ies→-y)
  that ends in -ly does not count unless it is one of the few -ly words that
  do inflect (`INFLECTING_LY`: family, reply, apply, fly ...), which is what
  catches "Stronglies", "Firmlies" and "Exclusivelies". A word with a digit
  is never flagged.
- `speaker_named`: whether a record names one of the people whose turns it
  was made from.
- `cut_end`: how a record ends when it is not a whole statement: on a dash,
  a conjunction, an article or a preposition that needs a word after it
  ("... so they have been real busy -", "... and the"), or on a question tag
  ("... should not they"), which asks the listener rather than says.
- `check_records`: the three checks over the records of a run, with counts and
  the first flagged records.

The figures built on them (share of statements that yield a record, records
per 100 turns, flagged records) are computed by the evaluations that own the
data (`remem.eval.prefeval`, `remem eval locomo`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from remem.store.text import STOPWORDS

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_HAS_DIGIT = re.compile(r"\d")

# Words an extractor may add to what was said: function words, the person it
# turns "I" into, the verbs that carry a preference or a fact, "budget" of a limit
# on spending ("keep it under £150"), and the whole words chat words are spelt out
# as ("gf" -> "girlfriend", `remem.extract.offline.text`).
COMMON_WORDS = STOPWORDS | frozenset(
    """also always another anything because cannot doesn everything has have is isn ll m
    never nothing re really someone something themselves they their theirs them user users
    ve wasn won d t s
    able allergic allergy avoid become believe buy called care choose consider dislike
    enjoy feel find get give go hate keep know learn like live love make mean name need
    own plan prefer rather refuse remember say see seem start stop take tell think try
    use usually want wish work prefers whenever
    budget under
    girlfriend boyfriend best friend husband wife brother sister little kid kids roommate
    mum birthday favourite tomorrow tonight without though""".split()
)

# -ly words that are nouns or verbs and so take -s, -ed or -ing; any word ending in
# -ply or -fly does too (apply, supply, butterfly).
INFLECTING_LY = frozenset(
    """ally assembly anomaly belly bully dally family holly jelly lily monopoly rally rely
    sully tally""".split()
)


def _bases(word: str) -> list[tuple[str, bool]]:
    """Candidate bases of a word, each with whether it came from an inflection (-s, -ed ...)."""
    out: list[tuple[str, bool]] = [(word, False)]

    def add(base: str, inflected: bool) -> None:
        if len(base) >= 2:
            out.append((base, inflected))

    if word.endswith("ies"):
        add(word[:-3] + "y", True)
    if word.endswith("es"):
        add(word[:-2], True)
    if word.endswith("s") and not word.endswith("ss"):
        add(word[:-1], True)
    if word.endswith("ied"):
        add(word[:-3] + "y", True)
    if word.endswith("ed"):
        stem = word[:-2]
        add(stem, True)
        add(stem + "e", True)
        if len(stem) > 2 and stem[-1] == stem[-2]:
            add(stem[:-1], True)
    if word.endswith("ing"):
        stem = word[:-3]
        add(stem, True)
        add(stem + "e", True)
        if len(stem) > 2 and stem[-1] == stem[-2]:
            add(stem[:-1], True)
    if word.endswith("ily"):
        add(word[:-3] + "y", False)
    if word.endswith("ly"):
        add(word[:-2], False)
    return out


@lru_cache(maxsize=1)
def _common_bases() -> frozenset[str]:
    return frozenset(b for w in COMMON_WORDS for b, _ in _bases(w))


def words(text: str) -> list[str]:
    """The lower-cased words of a text, letters only, split at apostrophes and digits."""
    return [w for w in _WORD.findall(text.lower()) if not _HAS_DIGIT.search(w)]


def unknown_words(text: str, sources: Iterable[str]) -> tuple[str, ...]:
    """The words of `text` in neither `sources` nor the common list, by the module's rule."""
    known = {b for s in sources for w in words(s) for b, _ in _bases(w)} | _common_bases()
    flagged: dict[str, None] = {}
    for token in _WORD.findall(text):
        if _HAS_DIGIT.search(token):
            continue
        word = token.lower()
        if not any(_passes(base, inflected, known) for base, inflected in _bases(word)):
            flagged[token] = None
    return tuple(flagged)


def _passes(base: str, inflected: bool, known: set[str]) -> bool:
    if base not in known:
        return False
    # an adverb takes no -s, -ed or -ing: "stronglies" is not "strongly" inflected
    return not (inflected and base.endswith("ly") and not _inflects(base))


def _inflects(word: str) -> bool:
    return word in INFLECTING_LY or word.endswith(("ply", "fly"))


def speaker_named(text: str, speakers: Sequence[str]) -> bool:
    """Whether `text` names one of `speakers` (a whole word, any case; first names count)."""
    lowered = set(_WORD.findall(text.lower()))
    for speaker in speakers:
        names = words(speaker)
        if names and (names[0] in lowered or " ".join(names) in text.lower()):
            return True
    return False


# words a whole statement does not end on; "with", "of", "so" may ("friends to play with")
_OPEN_ENDS = frozenset("and but or nor because the a an than my their your".split())
_TAG_END = re.compile(
    r"\b(?:am|is|are|was|were|do|does|did|have|has|had|can|could|will|would|shall|should"
    r"|must)(?:\s+not|n't)\s+(?:I|you|we|they|he|she|it)\s*\??$",
    re.IGNORECASE,
)


def cut_end(text: str) -> str | None:
    """The ending that leaves `text` unfinished (a dash, a conjunction, a question tag); None."""
    stripped = text.rstrip()
    if re.search(r"\s[-\u2013\u2014]+$", stripped):
        return stripped.rsplit(None, 1)[-1]
    if m := _TAG_END.search(stripped):
        return m.group(0)
    last = words(stripped)[-1:] if stripped else []
    return last[0] if last and last[0] in _OPEN_ENDS and len(words(stripped)) > 1 else None


def per_100(count: int, turns: int) -> float:
    """`count` per 100 `turns` (0 when there are no turns)."""
    return round(100 * count / turns, 2) if turns else 0.0


FLAGGED_SHOWN = 20  # how many flagged records a report lists


@dataclass(frozen=True, slots=True)
class Made:
    """A record as the checks see it: its text and the events it was made from."""

    id: str
    text: str
    event_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Said:
    """A turn as the checks see it: its text and who said it (None: nobody named)."""

    text: str
    speaker: str | None = None


def check_records(records: Sequence[Made], turns: Mapping[str, Said]) -> dict[str, Any]:
    """Unknown-word, speaker and cut-end checks over `records`, sources looked up in `turns`.

    A record counts for the speaker share when at least one of its source
    turns has a speaker, and names its speaker when its text names one of
    them. Flagged records are listed (the first `FLAGGED_SHOWN`) with the
    words that failed and their source turns.
    """
    flagged: list[dict[str, Any]] = []
    cut: list[dict[str, Any]] = []
    from_speaker = named = 0
    for rec in records:
        sources = [turns[e] for e in rec.event_ids if e in turns]
        if (end := cut_end(rec.text)) is not None:
            cut.append({"id": rec.id, "text": rec.text, "end": end})
        bad = unknown_words(rec.text, [s.text for s in sources])
        if bad:
            flagged.append(
                {
                    "id": rec.id,
                    "text": rec.text,
                    "words": list(bad),
                    "source": [s.text for s in sources],
                }
            )
        speakers = sorted({s.speaker for s in sources if s.speaker})
        if speakers:
            from_speaker += 1
            named += speaker_named(rec.text, speakers)
    return {
        "records": len(records),
        "flagged_words": len(flagged),
        "flagged_share": round(len(flagged) / len(records), 4) if records else 0.0,
        "from_named_speaker": from_speaker,
        "name_their_speaker": named,
        "speaker_named_share": round(named / from_speaker, 4) if from_speaker else None,
        "flagged_examples": flagged[:FLAGGED_SHOWN],
        "cut_ends": len(cut),
        "cut_examples": cut[:FLAGGED_SHOWN],
    }
