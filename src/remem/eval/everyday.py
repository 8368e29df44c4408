"""Everyday recall: does the packet hold what an assistant needs, for the questions people ask?

A file holds personas, each one actor who talks to an assistant over a few
sessions, and the questions asked afterwards of that actor:

    {"name": ..., "version": 1, "personas": [
      {"actor": "d01", "sessions": [{"session": "d01-s1", "start": "2026-01-05T09:00:00Z",
        "turns": [{"role": "user", "text": "..."},
                  {"role": "assistant", "text": "...", "filler": true}]}],
       "questions": [{"id": "d01-q1", "type": "applies", "ask": "...",
                      "must": [["vegetarian", "meat"], ["peanut"]]},
                     {"id": "d01-q3", "type": "current", "ask": "...",
                      "must": [["Porto"]], "stale": [["Lisbon"]]}]}]}

Turn i (from 0) of a session is dated `start` + i minutes, with event id
`{session}-{i}`. remem reads the turns as a user of the library would: each
persona's events are added with their own roles and times, `process()` runs,
then each question is asked of the persona's actor with `recall` (k and budget
as given; remem's defaults are 10 and 1000). The baselines of
`remem.eval.baselines` (dense and BM25) rank the same raw turns; their top k
is packed into the same budget as a packet is.

Scoring, per question, on the texts of the packet's items in order:

- a `must` group (alternative strings) is covered when some item's text holds
  one of them (case-insensitive); a hit when every group is covered, and the
  coverage is the share of groups covered;
- `current_ok` (type `current`): a hit, and the first item holding a `must`
  string comes before every item that holds a `stale` string and none of `must`;
- an empty packet for an answerable question (every type but `offtopic`) is
  counted, and filler turns (an assistant turn marked `filler`: an
  acknowledgement, a question back) are counted when an item stands for
  filler turns only, per 100 packets.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from remem.embed.base import Embedder
from remem.errors import InvalidInput
from remem.eval.baselines import BM25System, DenseSystem
from remem.eval.baselines import baselines as make_baselines
from remem.eval.locomo import read_json
from remem.eval.metrics import Retrieved, latency
from remem.memory.memory import Memory
from remem.model import Packet
from remem.pipeline.jobs import ProcessResult
from remem.recall.budget import pack

TYPES = ("applies", "direct", "current", "episode", "offtopic")
ANSWERABLE = tuple(t for t in TYPES if t != "offtopic")
ROLES = ("user", "assistant")
TENANT = "everyday"
BASELINES = ("dense", "bm25")  # the baselines a run adds (`--baselines`)

Progress = Callable[[str, int], Callable[[int], None]]


def _no_progress(_label: str, _total: int) -> Callable[[int], None]:
    return lambda _n: None


@dataclass(frozen=True, slots=True)
class ETurn:
    """One turn of a persona's sessions, as it becomes an event."""

    dia_id: str  # the event id: "{session}-{i}"
    session: str
    role: str
    text: str
    time: datetime
    filler: bool = False

    def as_text(self) -> str:
        """What remem's packet shows for the raw event, and what the baselines index."""
        return f"{self.role}: {self.text}"


@dataclass(frozen=True, slots=True)
class EQuestion:
    """One question asked after the last session, with what its packet must hold."""

    id: str
    type: str
    ask: str
    must: tuple[tuple[str, ...], ...] = ()
    stale: tuple[tuple[str, ...], ...] = ()

    @property
    def answerable(self) -> bool:
        return self.type != "offtopic"


@dataclass(frozen=True, slots=True)
class Persona:
    """One person: their turns in order and the questions asked of them."""

    actor: str
    turns: tuple[ETurn, ...]
    questions: tuple[EQuestion, ...]

    @property
    def fillers(self) -> frozenset[str]:
        """The ids of the turns marked filler."""
        return frozenset(t.dia_id for t in self.turns if t.filler)


@dataclass(frozen=True, slots=True)
class EverydayData:
    name: str
    personas: tuple[Persona, ...]

    @property
    def n_turns(self) -> int:
        return sum(len(p.turns) for p in self.personas)

    @property
    def n_questions(self) -> int:
        return sum(len(p.questions) for p in self.personas)


def load(path: str | Path) -> EverydayData:
    """Load an everyday-shaped file; InvalidInput saying what is wrong when it is not one."""
    return parse(read_json(path), str(path))


def _bad(origin: str, where: str, what: str) -> InvalidInput:
    return InvalidInput(f"{origin}: {where} {what} (see `remem eval everyday --help`)")


def _groups(raw: object, origin: str, where: str) -> tuple[tuple[str, ...], ...]:
    """A list of groups of alternative strings, each group non-empty."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(
        isinstance(g, list) and g and all(isinstance(s, str) and s.strip() for s in g) for g in raw
    ):
        raise _bad(origin, where, "must be a list of non-empty lists of strings")
    return tuple(tuple(s.strip() for s in g) for g in raw)


def _when(raw: object, origin: str, where: str) -> datetime:
    try:
        t = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        raise _bad(origin, where, f"has no ISO 8601 start time (got {raw!r})") from None
    if t.tzinfo is None:
        raise _bad(origin, where, f"start time needs a time zone, such as Z (got {raw!r})")
    return t


def _list(raw: object) -> list[Any]:
    return raw if isinstance(raw, list) else []


def parse(raw: object, origin: str = "input") -> EverydayData:
    """Build the data from decoded JSON; InvalidInput naming the first thing that is wrong."""
    if not isinstance(raw, dict) or not isinstance(raw.get("personas"), list):
        raise InvalidInput(
            f"{origin} is not an everyday-shaped file: expected an object with 'personas'"
        )
    personas: list[Persona] = []
    actors: set[str] = set()
    for n, p in enumerate(raw["personas"]):
        where = f"persona #{n}"
        if not isinstance(p, dict) or not isinstance(p.get("actor"), str) or not p["actor"]:
            raise _bad(origin, where, "needs an 'actor' name")
        actor = p["actor"]
        if actor in actors:
            raise _bad(origin, where, f"repeats actor {actor!r}")
        actors.add(actor)
        turns: list[ETurn] = []
        for s in _list(p.get("sessions")):
            if not isinstance(s, dict) or not isinstance(s.get("session"), str):
                raise _bad(origin, f"{actor}", "has a session without a 'session' name")
            start = _when(s.get("start"), origin, f"session {s['session']}")
            for i, t in enumerate(_list(s.get("turns"))):
                tw = f"turn {i} of session {s['session']}"
                if not isinstance(t, dict) or t.get("role") not in ROLES:
                    raise _bad(origin, tw, "needs a role, user or assistant")
                if not isinstance(t.get("text"), str) or not t["text"].strip():
                    raise _bad(origin, tw, "has no text")
                turns.append(
                    ETurn(f"{s['session']}-{i}", s["session"], t["role"], t["text"],
                          start + timedelta(minutes=i), t.get("filler") is True)
                )  # fmt: skip
        questions: list[EQuestion] = []
        for i, q in enumerate(_list(p.get("questions"))):
            qw = f"question #{i} of {actor}"
            if not isinstance(q, dict) or q.get("type") not in TYPES:
                raise _bad(origin, qw, f"needs a type, one of {', '.join(TYPES)}")
            if not isinstance(q.get("ask"), str) or not q["ask"].strip():
                raise _bad(origin, qw, "has no 'ask' text")
            must = _groups(q.get("must"), origin, f"{qw}'s 'must'")
            if q["type"] != "offtopic" and not must:
                raise _bad(origin, qw, "is answerable but has no 'must' groups")
            qid = str(q["id"]) if isinstance(q.get("id"), str) else f"{actor}-q{i + 1}"
            stale = _groups(q.get("stale"), origin, f"{qw}'s 'stale'")
            questions.append(EQuestion(qid, q["type"], q["ask"].strip(), must, stale))
        personas.append(Persona(actor, tuple(turns), tuple(questions)))
    if not personas:
        raise InvalidInput(f"{origin} has no personas")
    return EverydayData(str(raw.get("name") or origin), tuple(personas))


def event_rows(persona: Persona) -> Iterator[dict[str, Any]]:
    """A persona's turns as remem event rows, with their own roles, sessions and times."""
    for t in persona.turns:
        yield {
            "actor": persona.actor,
            "session": t.session,
            "role": t.role,
            "text": t.text,
            "time": t.time,
            "event_id": t.dia_id,
        }


# -- scoring ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Score:
    """One question's figures for one system."""

    id: str
    type: str
    hit: bool
    coverage: float  # share of `must` groups covered (1.0 for offtopic)
    current_ok: bool | None  # None unless type `current`
    items: int
    tokens: int
    fillers: int  # items standing for filler turns only
    ms: float = 0.0


def _holds(text: str, strings: Sequence[str]) -> bool:
    low = text.lower()
    return any(s.lower() in low for s in strings)


def score(
    q: EQuestion, items: Sequence[Retrieved], fillers: frozenset[str] = frozenset(), ms: float = 0.0
) -> Score:
    """Score one packet (its items in order) for one question; see the module's rules."""
    texts = [it.text for it in items]
    groups = [any(_holds(t, g) for t in texts) for g in q.must]
    hit = all(groups)
    coverage = sum(groups) / len(groups) if groups else 1.0
    ok = None
    if q.type == "current":
        every = [s for g in q.must for s in g]
        stale = [s for g in q.stale for s in g]
        new_at = next((i for i, t in enumerate(texts) if _holds(t, every)), None)
        old_at = next(
            (i for i, t in enumerate(texts) if _holds(t, stale) and not _holds(t, every)), None
        )
        ok = hit and new_at is not None and (old_at is None or new_at < old_at)
    n_fill = sum(bool(it.turns) and set(it.turns) <= fillers for it in items)
    tokens = sum(it.tokens for it in items)
    return Score(q.id, q.type, hit, coverage, ok, len(items), tokens, n_fill, ms)


def _mean(values: Sequence[float], digits: int = 3) -> float:
    return round(sum(values) / len(values), digits) if values else 0.0


def summarise(scores: Sequence[Score]) -> dict[str, Any]:
    """The figures of some questions' scores (hit and coverage mean nothing for offtopic)."""
    out: dict[str, Any] = {"questions": len(scores)}
    if not scores:
        return out
    answerable = [s for s in scores if s.type != "offtopic"]
    if answerable:
        out["hit"] = _mean([float(s.hit) for s in answerable])
        out["coverage"] = _mean([s.coverage for s in answerable])
        out["empty"] = sum(s.items == 0 for s in answerable)
    current = [s for s in scores if s.current_ok is not None]
    if current:
        out["current_ok"] = _mean([float(bool(s.current_ok)) for s in current])
    out["mean_items"] = _mean([s.items for s in scores], 2)
    out["mean_tokens"] = _mean([s.tokens for s in scores], 1)
    out["filler_per_100"] = round(100 * sum(s.fillers for s in scores) / len(scores), 1)
    return out


def figures(scores: Sequence[Score]) -> dict[str, Any]:
    """Per type, over the answerable questions, and over every packet (filler, latency)."""
    return {
        "types": {t: summarise([s for s in scores if s.type == t]) for t in TYPES},
        "answerable": summarise([s for s in scores if s.type != "offtopic"]),
        "all": summarise(scores),
        "latency": latency([s.ms for s in scores]),
        "misses": [s.id for s in scores if s.type != "offtopic" and not s.hit],
        "empty": [s.id for s in scores if s.type != "offtopic" and s.items == 0],
    }


# -- the systems ------------------------------------------------------------------------------


def packet_items(packet: Packet) -> list[Retrieved]:
    """A packet's items in order (pinned facts first), each with its source turns."""
    return [
        Retrieved(tuple(str(e) for e in it.source.get("event_ids") or ()), it.tokens, it.text)
        for it in (*packet.pinned, *packet.records)
    ]


def remem_scores(
    memory: Memory,
    data: EverydayData,
    *,
    k: int,
    budget: int,
    progress: Progress = _no_progress,
) -> tuple[list[Score], dict[str, Any]]:
    """Add each persona's events, process them, then ask its questions; the scores and
    what ingest did (seconds, processing counts)."""
    start = time.perf_counter()
    processed = ProcessResult()
    tick = progress("remem: add events and process", data.n_turns)
    for p in data.personas:
        memory.add_events(event_rows(p))
        processed += memory.process()
        tick(len(p.turns))
    seconds = round(time.perf_counter() - start, 3)
    ingest = {"ingest_seconds": seconds, "processed": processed.as_dict()}
    scores: list[Score] = []
    tick = progress("remem: questions", data.n_questions)
    for p in data.personas:
        for q in p.questions:
            t0 = time.perf_counter()
            packet = memory.recall(actor=p.actor, query=q.ask, k=k, budget=budget)
            ms = (time.perf_counter() - t0) * 1000
            scores.append(score(q, packet_items(packet), p.fillers, ms))
            tick(1)
    return scores, ingest


def baseline_scores(
    system: BM25System | DenseSystem,
    data: EverydayData,
    *,
    k: int,
    budget: int,
    progress: Progress = _no_progress,
) -> tuple[list[Score], dict[str, Any]]:
    """A baseline's top k of each persona's raw turns, packed into the budget; the scores."""
    tick = progress(f"{system.name}: questions", data.n_questions)
    ingest = 0.0
    scores: list[Score] = []
    for p in data.personas:
        ingest += system.ingest(p)
        text = {t.dia_id: t.as_text() for t in p.turns}
        for q in p.questions:
            t0 = time.perf_counter()
            ranked = system.search(p, q.ask, k)
            ms = (time.perf_counter() - t0) * 1000
            kept, _, _ = pack([(r, r.tokens) for r in ranked], budget)
            items = [Retrieved(r.turns, r.tokens, text[r.turns[0]]) for r in kept]
            scores.append(score(q, items, p.fillers, ms))
            tick(1)
    return scores, {"ingest_seconds": round(ingest, 3)}


def run(
    path: Path,
    *,
    k: int = 10,
    budget: int = 1000,
    embedder: Embedder | None,
    with_baselines: bool = False,
    progress: Progress = _no_progress,
    workdir: Path | None = None,
) -> dict[str, Any]:
    """remem (and the baselines) over an everyday-shaped file; one JSON-ready document.

    remem runs in a temporary database under `workdir` (default: a fresh temporary
    directory) with the default configuration.
    """
    data = load(path)
    notes = []
    if embedder is None:
        notes.append("no embedder: remem recall is lexical only and the dense baseline is skipped")
    systems: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="remem-everyday-", dir=workdir) as tmp:
        with Memory.open(Path(tmp) / "everyday.db", tenant=TENANT, embedder=embedder) as memory:
            scores, ingest = remem_scores(memory, data, k=k, budget=budget, progress=progress)
        systems["remem"] = {**figures(scores), **ingest}
    if with_baselines:
        chosen = [s for s in make_baselines(embedder) if s.name in BASELINES]
        for system in sorted(chosen, key=lambda s: BASELINES.index(s.name)):
            assert isinstance(system, BM25System | DenseSystem)
            scores, ingest = baseline_scores(system, data, k=k, budget=budget, progress=progress)
            systems[system.name] = {**figures(scores), **ingest}
    types: dict[str, int] = {t: 0 for t in TYPES}
    for p in data.personas:
        for q in p.questions:
            types[q.type] += 1
    return {
        "dataset": {
            "file": str(path),
            "name": data.name,
            "personas": len(data.personas),
            "turns": data.n_turns,
            "filler_turns": sum(len(p.fillers) for p in data.personas),
            "questions": data.n_questions,
            "types": types,
        },
        "k": k,
        "budget": budget,
        "systems": systems,
        "config": {"embedder": embedder.name if embedder is not None else None},
        "notes": notes,
    }
