"""Reading conversation benchmarks in LoCoMo format, leniently.

A file is a list of conversations. Each has a `sample_id`, a `conversation`
object holding `speaker_a`, `speaker_b`, turn lists `session_N` and dates
`session_N_date_time` ("1:56 pm on 8 May, 2023"), and a `qa` list of
questions with a `category` (1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop, 5 adversarial) and `evidence`: the `dia_id`s ("D3:7", the 7th
turn of session 3) of the turns that answer it.

Real files are a little messy, so loading is lenient and counts what it
skipped instead of failing: session lists are found by their own keys (some
date keys have no session), a missing or unreadable date falls back to a day
after the previous session, and evidence entries may hold several ids in one
string ("D8:6; D9:17"), be zero padded ("D30:05"), malformed ("D", "D:11:26")
or point at turns that do not exist; the last two are skipped and counted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from remem.errors import InvalidInput
from remem.files import read_text

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SCORED = (1, 2, 3, 4)  # "overall" covers these; 5 is reported on its own

_SESSION = re.compile(r"session_([0-9]+)")
_DIA = re.compile(r"D([0-9]+):([0-9]+)")
_SPLIT = re.compile(r"[;,\s]+")
_DATE = re.compile(
    r"(?:(\d{1,2})[:.](\d{2})\s*([ap])\.?m\.?\s*(?:on\s+)?)?(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})",
    re.IGNORECASE,
)
_MONTHS = {
    m[:3].lower(): i
    for i, m in enumerate(
        "January February March April May June July August September October November December"
        .split(), start=1
    )
}  # fmt: skip
_NAME_BAD = re.compile(r"[^A-Za-z0-9._@:+-]+")
# Where a conversation starts when no session of it has a readable date.
DEFAULT_START = datetime(2023, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a conversation, as it becomes an event."""

    dia_id: str  # canonical "D3:7"
    session: int
    speaker: str
    text: str  # what was said, with an image's caption appended
    time: datetime
    caption: str | None = None

    def as_text(self) -> str:
        """The text remem and the baselines index: the speaker's name, then the turn."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True, slots=True)
class Question:
    """One question, with the evidence turns that exist in its conversation."""

    index: int
    text: str
    category: int
    evidence: tuple[str, ...]
    answer: str | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation: its turns in order, the session dates and the questions."""

    sample_id: str
    actor: str  # a valid remem actor name derived from sample_id
    speakers: tuple[str, ...]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    session_dates: Mapping[int, datetime] = field(default_factory=dict)

    def event_id(self, dia_id: str) -> str:
        """The remem event id of a turn: unique across conversations of one tenant."""
        return f"{self.actor}:{dia_id}"

    def dia_id(self, event_id: str) -> str | None:
        """The turn an event id stands for, or None for another conversation's event."""
        prefix = f"{self.actor}:"
        return event_id[len(prefix) :] if event_id.startswith(prefix) else None


@dataclass
class Skipped:
    """What loading left out, counted so a report can say so."""

    malformed_evidence: list[str] = field(default_factory=list)
    missing_evidence: list[str] = field(default_factory=list)  # well formed, no such turn
    bad_dates: int = 0
    bad_turns: int = 0
    bad_questions: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "malformed_evidence": len(self.malformed_evidence),
            "missing_evidence": len(self.missing_evidence),
            "malformed_examples": self.malformed_evidence[:10],
            "missing_examples": self.missing_evidence[:10],
            "bad_dates": self.bad_dates,
            "bad_turns": self.bad_turns,
            "bad_questions": self.bad_questions,
        }


@dataclass(frozen=True, slots=True)
class Dataset:
    """A loaded file: its conversations and what was skipped on the way."""

    conversations: tuple[Conversation, ...]
    skipped: Skipped

    @property
    def n_questions(self) -> int:
        return sum(len(c.questions) for c in self.conversations)

    @property
    def n_turns(self) -> int:
        return sum(len(c.turns) for c in self.conversations)


def parse_session_date(text: object) -> datetime | None:
    """Read "1:56 pm on 8 May, 2023" (or "8 May 2023") as a UTC time; None if unreadable."""
    if not isinstance(text, str):
        return None
    m = _DATE.search(text)
    if m is None:
        return None
    hour_s, minute_s, ampm, day_s, month_s, year_s = m.groups()
    month = _MONTHS.get(month_s[:3].lower())
    if month is None:
        return None
    hour = int(hour_s) % 12 + (12 if ampm and ampm.lower() == "p" else 0) if hour_s else 0
    try:
        return datetime(int(year_s), month, int(day_s), hour, int(minute_s or 0), tzinfo=UTC)
    except ValueError:
        return None


def canonical_dia_id(raw: str) -> str | None:
    """ "D30:05" -> "D30:5"; None when `raw` is not of the form D<session>:<turn>."""
    m = _DIA.fullmatch(raw.strip())
    if m is None:
        return None
    return f"D{int(m.group(1))}:{int(m.group(2))}"


def parse_evidence(entries: object, known: set[str], skipped: Skipped) -> tuple[str, ...]:
    """The distinct, existing turn ids of an evidence list, in order.

    A string may hold several ids ("D8:6; D9:17"); ids are un-padded. Malformed
    pieces and ids of turns that do not exist are recorded in `skipped`.
    """
    if isinstance(entries, str):
        entries = [entries]
    if not isinstance(entries, list):
        return ()
    out: dict[str, None] = {}
    for entry in entries:
        for piece in _SPLIT.split(str(entry)):
            if not piece:
                continue
            dia = canonical_dia_id(piece)
            if dia is None:
                skipped.malformed_evidence.append(piece)
            elif dia not in known:
                skipped.missing_evidence.append(piece)
            else:
                out[dia] = None
    return tuple(out)


def actor_name(sample_id: str) -> str:
    """A remem actor name for a conversation id ("conv-26" stays "conv-26")."""
    name = _NAME_BAD.sub("-", sample_id).lstrip("._@:+-")
    return name[:120] or "conversation"


def load(path: str | Path) -> Dataset:
    """Load a LoCoMo-format file; InvalidInput when it is not one at all."""
    return parse(read_json(path), str(path))


MAX_DATASET_BYTES = 256 * 1024 * 1024  # an evaluation file, read up to this, then refused
SMALLER = "take a sample of it"


def read_json(path: str | Path) -> Any:
    """A dataset file's decoded JSON; InvalidInput saying why when it cannot be read."""
    try:
        return json.loads(read_text(path, MAX_DATASET_BYTES, "an evaluation set", SMALLER))
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path} is not JSON ({exc.msg} at line {exc.lineno})") from None


def parse(raw: object, origin: str = "input") -> Dataset:
    """Build a Dataset from already decoded LoCoMo JSON (a list, or one conversation)."""
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise InvalidInput(f"{origin} is not a LoCoMo file: expected a list of conversations")
    skipped = Skipped()
    convs: list[Conversation] = []
    actors: set[str] = set()
    for n, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("conversation"), dict):
            raise InvalidInput(
                f"{origin}: conversation #{n} has no 'conversation' object; "
                "is this a LoCoMo-format file?"
            )
        conv = _conversation(item, n, skipped)
        if conv.actor in actors:
            conv = Conversation(
                conv.sample_id, f"{conv.actor}-{n}", conv.speakers, conv.turns,
                conv.questions, conv.session_dates,
            )  # fmt: skip
        actors.add(conv.actor)
        convs.append(conv)
    return Dataset(tuple(convs), skipped)


def _conversation(item: Mapping[str, Any], n: int, skipped: Skipped) -> Conversation:
    body: Mapping[str, Any] = item["conversation"]
    sample_id = str(item.get("sample_id") or f"conv-{n}")
    speakers = tuple(str(body[k]) for k in ("speaker_a", "speaker_b") if body.get(k))
    sessions = sorted(
        (int(m.group(1)), value)
        for key, value in body.items()
        if (m := _SESSION.fullmatch(key)) and isinstance(value, list)
    )
    turns: list[Turn] = []
    dates: dict[int, datetime] = {}
    previous = DEFAULT_START - timedelta(days=1)
    for number, rows in sessions:
        start = parse_session_date(body.get(f"session_{number}_date_time"))
        if start is None:
            skipped.bad_dates += 1
            start = previous + timedelta(days=1)
        dates[number] = start
        previous = start
        turns.extend(_turns(number, rows, start, skipped))
    known = {t.dia_id for t in turns}
    questions = []
    for index, q in enumerate(item.get("qa") or []):
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            skipped.bad_questions += 1
            continue
        try:
            category = int(q.get("category", 0))
        except (TypeError, ValueError):
            category = 0
        answer = q.get("answer", q.get("adversarial_answer"))
        questions.append(
            Question(
                index=index,
                text=q["question"],
                category=category,
                evidence=parse_evidence(q.get("evidence"), known, skipped),
                answer=None if answer is None else str(answer),
            )
        )
    return Conversation(
        sample_id, actor_name(sample_id), speakers, tuple(turns), tuple(questions), dates
    )


def _turns(number: int, rows: list[Any], start: datetime, skipped: Skipped) -> Iterator[Turn]:
    seen: set[str] = set()
    for position, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            skipped.bad_turns += 1
            continue
        text = str(row.get("text") or "").strip()
        caption = row.get("blip_caption")
        caption = caption.strip() if isinstance(caption, str) and caption.strip() else None
        if caption:
            text = f"{text} [image: {caption}]" if text else f"[image: {caption}]"
        # a turn without a usable id is still part of the conversation
        dia_id = canonical_dia_id(str(row.get("dia_id") or "")) or f"D{number}:{position}"
        if not text or dia_id in seen:
            skipped.bad_turns += 1
            continue
        seen.add(dia_id)
        yield Turn(
            dia_id=dia_id,
            session=number,
            speaker=str(row.get("speaker") or "unknown"),
            text=text,
            # turns keep their order: one second apart from the session's start
            time=start + timedelta(seconds=position),
            caption=caption,
        )


def event_rows(conv: Conversation, roles: str = "user") -> Iterator[dict[str, Any]]:
    """The conversation as remem event rows, one actor, one remem session per session.

    `roles="user"` makes every turn a user turn (the offline extractor reads
    only user turns, and both speakers are people whose facts matter);
    `roles="alternate"` makes the first speaker the user and the other the
    assistant.
    """
    first = conv.speakers[0] if conv.speakers else None
    for t in conv.turns:
        role = "user" if roles == "user" or t.speaker == first else "assistant"
        meta: dict[str, Any] = {"speaker": t.speaker, "dia_id": t.dia_id, "locomo": conv.sample_id}
        if t.caption:
            meta["image_caption"] = t.caption
        yield {
            "actor": conv.actor,
            "session": f"{conv.actor}:s{t.session}",
            "role": role,
            "text": t.as_text(),
            "time": t.time,
            "event_id": conv.event_id(t.dia_id),
            "metadata": meta,
        }
