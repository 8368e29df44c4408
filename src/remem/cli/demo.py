"""`remem demo`: a three-session conversation, remembered and recalled."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import click

from remem.memory.memory import Memory

ACTOR = "alice"

SESSIONS: list[tuple[str, str, list[tuple[str, str]]]] = [
    ("trip-1", "2026-03-02T18:05:00Z", [
        ("user", "Hi! My partner and I are planning a trip to Japan in April."),
        ("assistant", "Lovely! What matters most to you when you travel?"),
        ("user", "I'm vegetarian, so food matters a lot. And I can't stand cilantro."),
        ("user", "I prefer aisle seats on long flights."),
        ("assistant", "Noted. Do you have a budget in mind?"),
        ("user", "hmm, let me think"),
        ("user", "Our budget for the trip is $2500."),
        ("user", "I live in Lisbon, so we'd fly from there."),
        ("user", "thanks!"),
    ]),
    ("trip-2", "2026-03-09T09:12:00Z", [
        ("user", "Remember that my passport expires in June 2027."),
        ("assistant", "Got it. Shall I look at ryokans in Kyoto?"),
        ("user", "ok"),
        ("user", "I love onsen towns, by the way."),
    ]),
    ("trip-3", "2026-03-20T20:40:00Z", [
        ("user", "Good news: our budget increased to $3200."),
        ("user", "Actually I moved to Porto last month, so we'll fly from Porto."),
        ("assistant", "Great, I'll look at flights from Porto."),
        ("user", "sounds good"),
    ]),
]  # fmt: skip

QUESTIONS = [
    "How much can we spend on the trip?",
    "Which airport do we fly from?",
    "Any food restrictions for restaurant bookings?",
    "Which seat should I book?",
]


def _events() -> list[dict[str, Any]]:
    rows = []
    from datetime import timedelta

    from remem.timeutil import parse_time

    for session, start, turns in SESSIONS:
        t0 = parse_time(start)
        for i, (role, text) in enumerate(turns):
            rows.append(
                {"actor": ACTOR, "session": session, "role": role, "text": text,
                 "time": (t0 + timedelta(minutes=i)).isoformat(),
                 "event_id": f"{session}-{i + 1}"}
            )  # fmt: skip
    return rows


def run_demo(db: str | None, as_json: bool = False) -> None:
    """Run the demo on `db`, or on a fresh temporary database when it is None."""
    with tempfile.TemporaryDirectory(prefix="remem-demo-") as tmp:
        path = db or str(Path(tmp) / "demo.db")
        with Memory.open(path) as mem:
            _run(mem, path, as_json)


def _run(mem: Memory, path: str, as_json: bool) -> None:
    out: dict[str, Any] = {"db": path}
    say = (lambda *_a, **_k: None) if as_json else click.echo
    emb = mem.embedder
    say(click.style("remem demo", bold=True) + f"  (database {path})")
    say(f"embedder: {emb.name if emb else 'none installed: lexical recall only'}\n")

    rows = _events()
    imported = mem.import_events(rows)
    say(click.style(f"1. {imported.imported} events in 3 sessions appended", bold=True))
    for session, start, turns in SESSIONS:
        say(f"   {session} ({start[:10]}): {len(turns)} turns")
    result = mem.process()
    out["process"] = result.as_dict()
    say(click.style("\n2. extraction and consolidation", bold=True))
    say(f"   {result.as_dict()}")

    recs = mem.records(actor=ACTOR, all=True)
    out["records"] = [r.as_dict() for r in recs]
    say(click.style("\n3. memory records (chatter like 'ok' stored nothing)", bold=True))
    for r in sorted(recs, key=lambda r: r.valid_from):
        mark = "x" if r.status.value == "invalid" else "*"
        by = f"  [superseded by {r.superseded_by}]" if r.superseded_by else ""
        say(f"   {mark} {r.text}  ({r.kind.value}, {r.status.value}){by}")

    say(click.style("\n4. recall, scope first, inside a 120-token budget", bold=True))
    out["recalls"] = []
    for q in QUESTIONS:
        packet = mem.recall(actor=ACTOR, query=q, k=3, budget=120)
        out["recalls"].append({"query": q, **packet.as_dict()})
        say(f"   Q: {q}")
        for it in packet.records:
            say(f"      - {it.text}  [{it.kind}, {it.source_date:%Y-%m-%d}]")

    as_of = "2026-03-10T00:00:00Z"
    # valid_at: what is known now about then (an as_of of then would know nothing: this
    # history was imported today, and nothing written after a time is known at it)
    before = mem.recall(actor=ACTOR, query=QUESTIONS[0], k=2, budget=120, valid_at=as_of,
                        include_events=False)  # fmt: skip
    out["as_of"] = {"as_of": as_of, **before.as_dict()}
    say(click.style(f"\n5. the first question valid at {as_of[:10]}, before the update", bold=True))
    for it in before.records:
        now = "still current" if it.status == "active" else "superseded since"
        say(f"      - {it.text}  [{it.kind}, {it.source_date:%Y-%m-%d}, {now}]")

    superseded = [r for r in recs if r.superseded_by and r.status.value == "invalid"]
    if superseded:
        hist = mem.history(superseded[0].id)
        out["history"] = [h.as_dict() for h in hist]
        say(click.style(f"\n6. history of {superseded[0].id}", bold=True))
        for h in hist:
            say(f"      {h.action:<11} {h.text or ''} {h.related_id or ''}")
    other = mem.recall(actor="bob", query="trip budget", k=3)
    out["isolation"] = {"actor": "bob", "records": len(other.records)}
    say(click.style("\n7. isolation: bob asks about the budget", bold=True))
    say(f"      {len(other.records)} memories (alice's stay alice's)")

    # exact facts: the profile as it held before the trip-3 update, and as it holds now
    say(click.style("\n8. alice's profile by exact lookup, before and after the update", bold=True))
    out["profile"] = {}
    for label, when in (("before", as_of), ("after", None)):
        prof = mem.profile(actor=ACTOR, valid_at=when)
        out["profile"][label] = prof.as_dict()
        say(f"   {label} ({when[:10] if when else 'now'}):")
        for f in prof.facts:
            ids = ", ".join(c.record_id for c in f.candidates)
            say(f"      {f.line()}  ({ids})")
    home = mem.fact(actor=ACTOR, field="home")
    out["fact"] = home.as_dict()
    say(f"   remem fact get --field home: {home.line()}")
    if as_json:
        click.echo(json.dumps(out, default=str))
