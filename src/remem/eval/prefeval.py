"""Preference recall on PrefEval-shaped files: construction, the run and its figures.

A file (like PrefEval's explicit-preference set) holds `explicit_preference`,
topics each with items `{preference, question}`, and
`distractor_conversations`, chat logs whose `conversation` is a list of
`{role, content}` turns. Only the distractors' user turns are used.

Construction, fixed by a seed so figures are reproducible. For an actor size
N: all items (in topic and file order) are shuffled and cut into actors of N
preferences, so an actor mixes topics; the last actor holds what is left.
Each preference is stated in its own session, after 3 user turns drawn
(without repetition within the session) from the distractors' user turns;
sessions are a day apart and turns a minute apart. Extraction runs over
everything, then each preference's question is asked of its actor, and as
many questions drawn from topics the actor stated nothing about
("off-topic"; fewer, or none, when the actor states nearly every topic).

A hit@k: the preference's own turn, or a record whose provenance includes
it, is among the first k items of the packet. The packet is one ranked list:
`Packet.records` holds records and raw events (kind "event") together, in
the order recall returns them, and both count as items. The baselines of
`remem.eval.baselines` rank the same actor's raw turns.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from remem.embed.base import Embedder
from remem.errors import InvalidInput
from remem.eval.baselines import baselines as make_baselines
from remem.eval.locomo import read_json
from remem.eval.metrics import latency
from remem.eval.quality import Made, Said, check_records, per_100
from remem.eval.runner import made_records, packet_summary
from remem.memory.memory import Memory
from remem.model import Packet

DISTRACTORS_PER_SESSION = 3
TENANT = "prefeval"
MAX_BUDGET = 1_000_000  # the top k alone decides, as for the baselines
START = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)

Progress = Callable[[str, int], Callable[[int], None]]


def _no_progress(_label: str, _total: int) -> Callable[[int], None]:
    return lambda _n: None


@dataclass(frozen=True, slots=True)
class Item:
    """One preference of the file and the later request it should shape."""

    topic: str
    index: int  # position within its topic
    preference: str
    question: str


@dataclass(frozen=True, slots=True)
class PrefData:
    """A loaded file: the items by topic and the distractor user turns."""

    items: tuple[Item, ...]
    distractors: tuple[str, ...]
    skipped: int = 0  # items or turns that were not usable

    @property
    def topics(self) -> dict[str, int]:
        """Topic -> number of items, in name order."""
        out: dict[str, int] = {}
        for it in sorted(self.items, key=lambda i: i.topic):
            out[it.topic] = out.get(it.topic, 0) + 1
        return out


@dataclass(frozen=True, slots=True)
class PTurn:
    """One turn an actor's events are made of."""

    dia_id: str  # "s3:4": the 4th turn of session 3
    session: int
    text: str
    time: datetime
    preference: int | None = None  # index into the actor's items; None: a distractor

    def as_text(self) -> str:
        """What remem's packet shows for the raw event, and what the baselines index."""
        return f"user: {self.text}"


@dataclass(frozen=True, slots=True)
class Actor:
    """One actor: its preferences, the turns stating them, and its off-topic questions."""

    actor: str
    items: tuple[Item, ...]
    turns: tuple[PTurn, ...]
    off_topic: tuple[Item, ...]

    def event_id(self, dia_id: str) -> str:
        """The remem event id of a turn, unique across actors."""
        return f"{self.actor}:{dia_id}"

    def dia_id(self, event_id: str) -> str | None:
        """The turn an event id stands for, or None for another actor's event."""
        prefix = f"{self.actor}:"
        return event_id[len(prefix) :] if event_id.startswith(prefix) else None

    def statement(self, i: int) -> PTurn:
        """The turn stating the actor's i-th preference."""
        return next(t for t in self.turns if t.preference == i)


def load(path: str | Path) -> PrefData:
    """Load a PrefEval-shaped file; InvalidInput when it is not one."""
    return parse(read_json(path), str(path))


def parse(raw: object, origin: str = "input") -> PrefData:
    """Build PrefData from decoded JSON; items or turns without usable text are skipped."""
    if not isinstance(raw, dict) or not isinstance(raw.get("explicit_preference"), dict):
        raise InvalidInput(
            f"{origin} is not a PrefEval-shaped file: expected an object with "
            "'explicit_preference' (topics of {preference, question} items)"
        )
    skipped = 0
    items: list[Item] = []
    for topic, rows in sorted(raw["explicit_preference"].items()):
        for index, row in enumerate(rows if isinstance(rows, list) else []):
            pref = row.get("preference") if isinstance(row, dict) else None
            question = row.get("question") if isinstance(row, dict) else None
            if not (
                isinstance(pref, str)
                and pref.strip()
                and isinstance(question, str)
                and question.strip()
            ):
                skipped += 1
                continue
            items.append(Item(str(topic), index, pref.strip(), question.strip()))
    if not items:
        raise InvalidInput(f"{origin} has no usable preference item")
    distractors: list[str] = []
    convs = raw.get("distractor_conversations")
    for conv in convs if isinstance(convs, list) else []:
        turns = conv.get("conversation") if isinstance(conv, dict) else None
        for turn in turns if isinstance(turns, list) else []:
            if not isinstance(turn, dict) or turn.get("role") != "user":
                continue
            text = turn.get("content")
            if isinstance(text, str) and text.strip():
                distractors.append(text.strip())
            else:
                skipped += 1
    return PrefData(tuple(items), tuple(distractors), skipped)


def build(data: PrefData, per_actor: int, seed: int) -> tuple[Actor, ...]:
    """The actors of one size, by the module's construction; the same seed, the same actors."""
    if per_actor < 1:
        raise InvalidInput("--per-actor values must be at least 1")
    rng = random.Random(f"prefeval:{seed}:{per_actor}")
    dealt = sorted(data.items, key=lambda it: (it.topic, it.index))
    rng.shuffle(dealt)
    actors = []
    for a, first in enumerate(range(0, len(dealt), per_actor)):
        items = tuple(dealt[first : first + per_actor])
        name = f"pe{per_actor}-{a + 1:03d}"
        turns: list[PTurn] = []
        for i, it in enumerate(items):
            session = i + 1
            day = START + timedelta(days=i)
            n = min(DISTRACTORS_PER_SESSION, len(data.distractors))
            said = [*rng.sample(data.distractors, n), it.preference]
            for j, text in enumerate(said):
                turns.append(
                    PTurn(
                        f"s{session}:{j + 1}",
                        session,
                        text,
                        day + timedelta(minutes=j),
                        i if j == len(said) - 1 else None,
                    )
                )
        stated = {it.topic for it in items}
        others = [it for it in data.items if it.topic not in stated]
        off = tuple(rng.sample(others, min(len(items), len(others))))
        actors.append(Actor(name, items, tuple(turns), off))
    return tuple(actors)


def event_rows(actor: Actor) -> Iterator[dict[str, Any]]:
    """An actor's turns as remem event rows: one remem session per stated preference."""
    for t in actor.turns:
        yield {
            "actor": actor.actor,
            "session": f"{actor.actor}:s{t.session}",
            "role": "user",
            "text": t.text,
            "time": t.time,
            "event_id": actor.event_id(t.dia_id),
            "metadata": {"prefeval": "preference" if t.preference is not None else "distractor"},
        }


def first_hit(ranked: Sequence[Sequence[str]], gold: str) -> int | None:
    """The 1-based rank of the first item standing for turn `gold`; None when none does."""
    for rank, turns in enumerate(ranked, start=1):
        if gold in turns:
            return rank
    return None


def packet_turns(actor: Actor, packet: Packet) -> list[tuple[str, ...]]:
    """The packet as one ranked list: each item's source turns of this actor, in order."""
    return [
        tuple(d for e in item.source.get("event_ids") or () if (d := actor.dia_id(str(e))))
        for item in packet.records
    ]


def hits(ranks: Sequence[tuple[str, int | None]], ks: Sequence[int]) -> dict[str, Any]:
    """hit@k overall and per topic from (topic, first hit rank) pairs."""

    def one(rs: list[int | None]) -> dict[str, float | int]:
        out: dict[str, float | int] = {"questions": len(rs)}
        for k in ks:
            out[f"hit@{k}"] = round(sum(r is not None and r <= k for r in rs) / len(rs), 4)
        return out

    topics = sorted({t for t, _ in ranks})
    return {
        "overall": one([r for _, r in ranks]) if ranks else {"questions": 0},
        "topics": {t: one([r for tt, r in ranks if tt == t]) for t in topics},
    }


def write_quality(memory: Memory, actors: Sequence[Actor]) -> dict[str, Any]:
    """What extraction wrote: statements that yielded a record, distractor records, bad words."""
    made: list[Made] = []
    turns: dict[str, Said] = {}
    statements = yielded = distractor_turns = distractor_records = 0
    for actor in actors:
        records = made_records(memory, actor.actor)
        made.extend(records)
        sources = {e for r in records for e in r.event_ids}
        distractors = set()
        for t in actor.turns:
            eid = actor.event_id(t.dia_id)
            turns[eid] = Said(t.text)
            if t.preference is None:
                distractors.add(eid)
            else:
                statements += 1
                yielded += eid in sources
        distractor_turns += len(distractors)
        distractor_records += sum(
            bool(r.event_ids) and set(r.event_ids) <= distractors for r in records
        )
    figures = check_records(made, turns)
    return {
        "statements": statements,
        "statements_with_record": yielded,
        "statement_share": round(yielded / statements, 4) if statements else 0.0,
        "distractor_turns": distractor_turns,
        "distractor_records": distractor_records,
        "records_per_100_distractor_turns": per_100(distractor_records, distractor_turns),
        **{k: v for k, v in figures.items() if "speaker" not in k},
    }


def run_size(
    data: PrefData,
    per_actor: int,
    *,
    ks: Sequence[int],
    seed: int,
    embedder: Embedder | None,
    with_baselines: bool,
    limit_questions: int | None,
    workdir: Path,
    progress: Progress = _no_progress,
) -> dict[str, Any]:
    """Build the actors of one size, run remem (and the baselines) on them; the figures."""
    actors = build(data, per_actor, seed)
    depth = max(ks)
    asked = {a.actor: a.items[:limit_questions] for a in actors}
    off = {a.actor: a.off_topic[: len(asked[a.actor])] for a in actors}
    n_events = sum(len(a.turns) for a in actors)
    n_asked = sum(len(v) for v in asked.values())
    systems: dict[str, Any] = {}
    with Memory.open(
        workdir / f"prefeval-{per_actor}.db", tenant=TENANT, embedder=embedder
    ) as memory:
        start = time.perf_counter()
        tick = progress(f"{per_actor}/actor remem: import", n_events)
        for a in actors:
            memory.import_events(event_rows(a))
            tick(len(a.turns))
        tick = progress(f"{per_actor}/actor remem: extract", n_events)
        while (done := memory.process(limit=64).jobs_done) > 0:
            tick(done)
        ingest = time.perf_counter() - start
        ranks: list[tuple[str, int | None]] = []
        ms: list[float] = []
        on_sizes: list[tuple[int, int]] = []
        off_sizes: list[tuple[int, int]] = []
        tick = progress(
            f"{per_actor}/actor remem: questions", n_asked + sum(len(v) for v in off.values())
        )
        for a in actors:
            for i, it in enumerate(asked[a.actor]):
                t0 = time.perf_counter()
                packet = memory.recall(actor=a.actor, query=it.question, k=depth, budget=MAX_BUDGET)
                ms.append((time.perf_counter() - t0) * 1000)
                ranks.append((it.topic, first_hit(packet_turns(a, packet), a.statement(i).dia_id)))
                on_sizes.append((len(packet.records), packet.tokens))
                tick(1)
            for it in off[a.actor]:
                t0 = time.perf_counter()
                packet = memory.recall(actor=a.actor, query=it.question, k=depth, budget=MAX_BUDGET)
                ms.append((time.perf_counter() - t0) * 1000)
                off_sizes.append((len(packet.records), packet.tokens))
                tick(1)
        systems["remem"] = {
            **hits(ranks, ks),
            "ingest_seconds": round(ingest, 3),
            "latency": latency(ms),
        }
        quality = write_quality(memory, actors)
    packets = {"on_topic": packet_summary(on_sizes), "off_topic": packet_summary(off_sizes)}
    if with_baselines:
        for system in make_baselines(embedder):
            tick = progress(f"{per_actor}/actor {system.name}", n_asked)
            ingest = 0.0
            ranks, ms = [], []
            for a in actors:
                ingest += system.ingest(a)
                for i, it in enumerate(asked[a.actor]):
                    t0 = time.perf_counter()
                    ranked = system.search(a, it.question, depth)
                    ms.append((time.perf_counter() - t0) * 1000)
                    gold = a.statement(i).dia_id
                    ranks.append((it.topic, first_hit([r.turns for r in ranked], gold)))
                    tick(1)
            systems[system.name] = {
                **hits(ranks, ks),
                "ingest_seconds": round(ingest, 3),
                "latency": latency(ms),
            }
    return {
        "actors": len(actors),
        "preferences_per_actor": [
            min(len(a.items) for a in actors),
            max(len(a.items) for a in actors),
        ],
        "events": n_events,
        "questions": n_asked,
        "off_topic_questions": len(off_sizes),
        "systems": systems,
        "packets": packets,
        "write_quality": quality,
    }


def run(
    path: Path,
    *,
    per_actor: Sequence[int] = (10, 50),
    ks: Sequence[int] = (1, 5, 10),
    seed: int = 0,
    embedder: Embedder | None,
    with_baselines: bool = False,
    limit_questions: int | None = None,
    progress: Progress = _no_progress,
) -> dict[str, Any]:
    """Every actor size of a PrefEval-shaped file, in temporary databases; one JSON document."""
    data = load(path)
    ks = sorted(set(ks))
    notes = []
    if embedder is None:
        notes.append("no embedder: remem recall is lexical only and dense baselines are skipped")
    sizes: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="remem-prefeval-") as tmp:
        for n in sorted(set(per_actor)):
            sizes[str(n)] = run_size(
                data,
                n,
                ks=ks,
                seed=seed,
                embedder=embedder,
                with_baselines=with_baselines,
                limit_questions=limit_questions,
                workdir=Path(tmp),
                progress=progress,
            )
    return {
        "dataset": {
            "file": str(path),
            "topics": data.topics,
            "preferences": len(data.items),
            "distractor_user_turns": len(data.distractors),
            "skipped": data.skipped,
        },
        "ks": list(ks),
        "sizes": sizes,
        "config": {
            "per_actor": sorted(set(per_actor)),
            "seed": seed,
            "embedder": embedder.name if embedder is not None else None,
            "distractors_per_session": DISTRACTORS_PER_SESSION,
            "limit_questions": limit_questions,
            "budget": MAX_BUDGET,
        },
        "notes": notes,
    }
