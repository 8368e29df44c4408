"""Query understanding: what a recall query says besides its words.

Two things a question often carries that word matching handles badly:

- **a date** ("on 13 October, 2023", "in June 2022", "in 2023"): the turns it
  points at rarely contain the date (it is when they were said, not what), so
  the date becomes a time span that favours what happened inside it, and its
  words leave the word query;
- **a speaker's name** ("What has Melanie painted?"): the turns Melanie said
  are about her, while turns that merely address her ("Thanks, Melanie!") are
  not, yet both match the name as a word. A name becomes a speaker match and
  leaves the word query too, and the dense searches read the question also
  with the name put as "someone" (`Query.embedded`; see `remem.recall.gather`).
  Speakers are those of the thread log's events (`metadata["speaker"]`); a log
  without them names nobody.

A word is only taken out of the word query when content words remain, so a
query that is nothing but a name or a date still matches by words.

Pure functions of text, no I/O; the engine applies what they find.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from remem.store.text import STOPWORDS

# What a candidate earns, on the fused scale where the best word match scores 1
# and a cosine adds up to 1 more: enough to lift a fair match above a slightly
# better one, never enough to lift a candidate that matches nothing. On the
# LoCoMo development set anything from 0.2 to 0.6 for the speaker and from 0.25
# up for the date gave evidence recall@10 within 0.01 of these. Since records
# name their speaker, a larger speaker bonus also lifts the named speaker's
# weakly related turns when a question names the wrong person (adversarial
# recall@10 0.63 at 0.4, below BM25's 0.64; 0.71 at 0.2, for 0.004 of
# categories 1-4), so it is the low end of that range.
SPEAKER_BONUS = 0.2  # said by a speaker the query names
DATE_BONUS = 0.5  # said (or, for a record, holding from) within a span the query names

# The word a named speaker's name becomes in the text the query vector embeds.
NEUTRAL = "someone"

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_NAME = re.compile(r"([^\W_]+)(['\u2019]s\b)?", re.UNICODE)
_FULL = (
    "january february march april may june july august september october november december"
).split()
_SHORT = "jan feb mar apr may jun jul aug sep oct nov dec".split()
_MONTHS = {name: n for n, name in enumerate(_FULL, start=1)}
_MONTHS |= {name: n for n, name in enumerate(_SHORT, start=1)} | {"sept": 9}
_MONTH = r"(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_FULL_MONTH = r"(" + "|".join(_FULL) + r")"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
# Longest forms first, each removed from the text before the next is tried. A
# month or year alone counts only after a word that makes it a time ("in June",
# "during 2023"): "may" and "march" are also ordinary words, and a month alone
# must be spelt out ("in Jan" may be about someone called Jan).
_DATES = (
    ("ymd", re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")),
    ("dmy", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)),
    ("mdy", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE)),
    ("my", re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)),
    ("m", re.compile(rf"\b(?:in|during|early|late|mid)\s+{_FULL_MONTH}\b", re.IGNORECASE)),
    ("y", re.compile(rf"\b(?:in|during|of)\s+{_YEAR}\b", re.IGNORECASE)),
)


@dataclass(frozen=True, slots=True)
class Span:
    """A stretch of time a query names: [start, end), or a month of any year."""

    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None  # "in June" without a year: June of any year

    def holds(self, when: datetime) -> bool:
        """Whether `when` (UTC when naive) falls inside the span."""
        if self.month is not None:
            return when.month == self.month
        if self.start is None or self.end is None:
            return False
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
        return self.start <= when < self.end


@dataclass(frozen=True, slots=True)
class Query:
    """A recall query, understood: its word query, the spans it names, the speakers."""

    text: str  # as asked
    words: str  # what the word (BM25) search is given
    spans: tuple[Span, ...] = ()
    speakers: frozenset[str] = frozenset()  # named speakers, lower-cased
    # the text embedded beside `text`: the named speakers' names put as NEUTRAL (the
    # speaker bonus carries them); `text` itself when it names nobody
    dense: str = ""

    @property
    def embedded(self) -> str:
        """The query without its speakers' names, as the dense searches also read it."""
        return self.dense or self.text

    def in_span(self, when: datetime) -> bool:
        """Whether `when` lies in a span the query names."""
        return any(span.holds(when) for span in self.spans)

    def said_by_named(self, speaker: object) -> bool:
        """Whether a turn's speaker is one the query names."""
        return isinstance(speaker, str) and speaker.lower() in self.speakers

    def bonus(self, speakers: Iterable[object], when: datetime) -> float:
        """What a candidate said by `speakers` at `when` earns for matching the query's
        named speakers and time spans."""
        named = SPEAKER_BONUS if any(self.said_by_named(s) for s in speakers) else 0.0
        return named + (DATE_BONUS if self.in_span(when) else 0.0)

    def explain(self) -> dict[str, object]:
        """What was understood, for a recall's explanation."""
        return {
            "words": self.words,
            "time_spans": [_describe(s) for s in self.spans],
            "speakers": sorted(self.speakers),
        }


def understand(text: str) -> Query:
    """A query with the dates it names taken out of its word query."""
    spans, rest = time_spans(text)
    return Query(text, rest if spans and has_content(rest) else text, tuple(spans))


def with_speakers(query: Query, speakers: Iterable[str]) -> Query:
    """`query` knowing which of `speakers` it names, their names out of its word query."""
    asked = {w.lower() for w in _WORD.findall(query.words)}
    named: set[str] = set()
    name_words: set[str] = set()
    for speaker in speakers:
        parts = {w.lower() for w in _WORD.findall(speaker)} - STOPWORDS
        hit = parts & asked
        if hit:
            named.add(speaker.lower())
            name_words |= hit
    if not named:
        return query
    rest = " ".join(w for w in _WORD.findall(query.words) if w.lower() not in name_words)
    if not has_content(rest):  # nothing but names: they stay the query's meaning
        return Query(query.text, query.words, query.spans, frozenset(named))
    return Query(query.text, rest, query.spans, frozenset(named), nameless(query.text, name_words))


def nameless(text: str, names: Iterable[str]) -> str:
    """`text` with each of these (lower-cased) name words, and a possessive "'s" after
    one, put as `NEUTRAL`: the text the query vector embeds once the names are speakers.

    A short record that names a speaker ("Melanie painted a lake sunrise") is near any
    question naming her; the speaker bonus already favours her turns, and a question
    naming the wrong person (she never did it) must find the one who did by meaning.
    """
    drop = {n.lower() for n in names}
    if not drop:
        return text

    def swap(m: re.Match[str]) -> str:
        if m.group(1).lower() not in drop:
            return m.group(0)
        return NEUTRAL + (m.group(2) or "") if NEUTRAL else ""

    out = " ".join(_NAME.sub(swap, text).split())
    return out if has_content(out) else text


def has_content(text: str) -> bool:
    """Whether a text holds a word the word search does not ignore."""
    return any(w.lower() not in STOPWORDS for w in _WORD.findall(text))


def time_spans(text: str) -> tuple[list[Span], str]:
    """The time spans a text names, and the text without them."""
    spans: list[Span] = []
    for kind, pattern in _DATES:
        for m in pattern.finditer(text):
            span = _span(kind, m.groups())
            if span is not None:
                spans.append(span)
        text = pattern.sub(" ", text)
    return spans, text


def _span(kind: str, groups: tuple[str, ...]) -> Span | None:
    if kind == "ymd":
        year, month, day = groups
    elif kind == "dmy":
        day, month, year = groups
    elif kind == "mdy":
        month, day, year = groups
    elif kind == "my":
        (month, year), day = groups, ""
    elif kind == "m":
        return Span(month=_MONTHS[groups[0].lower()])
    else:
        start = datetime(int(groups[0]), 1, 1, tzinfo=UTC)
        return Span(start, start.replace(year=start.year + 1))
    number = int(month) if month.isdigit() else _MONTHS[month.lower()]
    try:
        if day:
            start = datetime(int(year), number, int(day), tzinfo=UTC)
            return Span(start, start + timedelta(days=1))
        start = datetime(int(year), number, 1, tzinfo=UTC)
    except ValueError:  # 31 February
        return None
    end = (
        start.replace(year=start.year + 1, month=1)
        if number == 12
        else start.replace(month=number + 1)
    )
    return Span(start, end)


def _describe(span: Span) -> str:
    if span.month is not None:
        return f"month {span.month} of any year"
    assert span.start is not None and span.end is not None
    return f"{span.start.date().isoformat()} to {span.end.date().isoformat()} (exclusive)"
