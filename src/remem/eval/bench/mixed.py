"""`remem bench --http --mixed`: adds, retrieves and forgets at once, then a check that
nothing was lost.

For `seconds`, `concurrency` client threads (each on its own keep-alive connection)
send a fixed mix through `remem serve --workers N`, in every ten requests of a thread:

    retrieve   5 in 10   POST /v1/memories/retrieve    on the bench's records in scope
    remember   2 in 10   POST /v1/memories/batch-create one record of the thread's actor
                                                       (a repeat answers the record it repeats)
    event      2 in 10   POST /v1/events               one event of the thread's event actor
    forget     1 in 10   DELETE /v1/memories/{id}      the thread's oldest record left

Every answer is counted (`repeats`: remembers the server found to repeat a record it
already had, as `Memory.remember` does): `errors` are all that are not 2xx (with `server_errors` the
5xx among them, and `transport_errors` where no answer came). At the end, read back
through the API: every record remembered and not forgotten is listed (superseded ones
included), no forgotten one is, and every event accepted is listed (`lost` counts each
kind; `verified` is true when all three are zero and no request failed). The records
and events of the mix are the run's own actors (`mixed-*`), apart from the bench's
records in scope.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np

from remem.eval.bench.synthetic import QUERIES

THINGS = ["violin", "kayak", "telescope", "bonsai tree", "typewriter", "canoe", "harp"]
PEOPLE = ["Sam", "Priya", "Tomás", "Mei", "Olu", "Anna", "Kenji", "Rosa", "Luca"]
PLACES = ["Lisbon", "Kyoto", "Oslo", "Lima", "Hanoi", "Nairobi", "Quito"]
OPS = ("retrieve", "remember", "event", "forget")
# interleaved, so that a thread's first five requests hold every kind
_MIX = ("remember", "retrieve", "event", "forget", "retrieve",
        "remember", "retrieve", "event", "retrieve", "retrieve")  # fmt: skip


class _Thread:
    """One client thread's own actors, what it wrote, and what it measured."""

    def __init__(self, w: int) -> None:
        self.actor, self.event_actor = f"mixed-{w}", f"mixed-ev-{w}"
        self.kept: list[str] = []  # remembered, not (yet) forgotten, oldest first
        self.forgotten: list[str] = []
        self.events: list[str] = []
        self.ms: dict[str, list[float]] = {op: [] for op in OPS}
        self.errors = self.server_errors = self.transport_errors = 0
        self.repeats = 0  # remembers answered with a record the thread already had
        self.samples: list[str] = []  # the first few failures, for the report


def run_mixed(
    url: str, key: str, *, seconds: float, concurrency: int, say: Callable[[str], None]
) -> dict[str, Any]:
    """The mixed load on the server at `url` for `seconds` from `concurrency` threads,
    then the check that nothing was lost; the figures."""
    headers = {"Authorization": f"Bearer {key}"}
    threads = [_Thread(w) for w in range(concurrency)]
    deadline = time.monotonic() + seconds

    def drive(t: _Thread, w: int) -> None:  # w: the thread's number
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            i = 0
            while time.monotonic() < deadline:
                op = _MIX[i % len(_MIX)]
                if op == "forget" and not t.kept:
                    op = "remember"
                _send(http, t, op, w, i)
                i += 1

    t0 = time.perf_counter()
    workers = [
        threading.Thread(target=drive, args=(t, w), name=f"bench-mixed-{w}")
        for w, t in enumerate(threads)
    ]
    for th in workers:
        th.start()
    for th in workers:
        th.join()
    wall = time.perf_counter() - t0
    say(f"mixed: {sum(len(ms) for t in threads for ms in t.ms.values())} requests in {wall:.0f}s")
    lost = _lost(url, headers, threads)
    figures: dict[str, Any] = {
        "seconds": round(wall, 1),
        "concurrency": concurrency,
        "requests": sum(len(t.ms[op]) for t in threads for op in OPS),
        "errors": sum(t.errors for t in threads),
        "server_errors": sum(t.server_errors for t in threads),
        "transport_errors": sum(t.transport_errors for t in threads),
        "repeats": sum(t.repeats for t in threads),
        "failures": [s for t in threads for s in t.samples][:5],
        "lost": lost,
    }
    for op in OPS:
        ms = [m for t in threads for m in t.ms[op]]
        figures[op] = {
            "n": len(ms),
            "per_s": round(len(ms) / wall, 1),
            "p50_ms": round(float(np.percentile(ms, 50)), 2) if ms else None,
            "p95_ms": round(float(np.percentile(ms, 95)), 2) if ms else None,
        }
    figures["verified"] = figures["errors"] == 0 and not any(lost.values())
    return figures


def _send(http: httpx.Client, t: _Thread, op: str, w: int, i: int) -> None:
    """One request of the mix; what it wrote is kept in `t` once the server said so."""
    n = w * 1_000_000 + i
    method, path, body = "POST", "/v1/memories/retrieve", None
    if op == "retrieve":
        body = {"actor_id": "bench-main", "query": QUERIES[n % len(QUERIES)], "top_k": 10}
    elif op == "remember":
        text = (
            f"{PEOPLE[i % len(PEOPLE)]} lent me a {THINGS[(i // 9) % len(THINGS)]} in "
            f"{PLACES[(i // 63) % len(PLACES)]}, ticket {w}-{i}"
        )
        path, body = "/v1/memories/batch-create", {"records": [{"actor_id": t.actor, "text": text}]}
    elif op == "event":
        event_id = f"mixed-{w}-{i}"  # kept once accepted, below
        text = f"I walked to {PLACES[n % len(PLACES)]} on day {i}."
        path = "/v1/events"
        body = {"actor_id": t.event_actor, "session_id": "s", "role": "user", "text": text,
                "event_id": event_id}  # fmt: skip
    else:
        method, path = "DELETE", f"/v1/memories/{t.kept[0]}"
    t0 = time.perf_counter()
    try:
        got = http.request(method, path, json=body)
    except httpx.HTTPError as exc:
        t.transport_errors += 1
        t.errors += 1
        t.samples.append(f"{op}: {type(exc).__name__}")
        return
    t.ms[op].append((time.perf_counter() - t0) * 1000)
    if got.status_code >= 300:
        if op == "forget":  # not tried again: what became of it is unknown, so not checked
            t.kept.pop(0)
        t.errors += 1
        t.server_errors += got.status_code >= 500
        t.samples.append(f"{op}: {got.status_code} {got.text[:200]}")
        return
    if op == "remember":
        (result,) = got.json()["results"]
        rid = result.get("record_id")
        if rid in t.kept:  # a repeat of an active record answers that record's id
            t.repeats += 1
        elif rid and result.get("status", 201) < 300:
            t.kept.append(rid)
    elif op == "event":
        t.events.append(f"mixed-{w}-{i}")
    elif op == "forget":
        t.forgotten.append(t.kept.pop(0))


def _lost(url: str, headers: dict[str, str], threads: list[_Thread]) -> dict[str, int]:
    """Read back each thread's actors: records kept but not listed, forgotten but listed,
    events accepted but not listed."""
    out = {"records_missing": 0, "forgotten_listed": 0, "events_missing": 0}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as http:
        for t in threads:
            # superseded records are kept (INVALID), so listed with all=true
            listed = set(_all(http, "/v1/memories", t.actor, "records", "id", 1000))
            out["records_missing"] += len(set(t.kept) - listed)
            out["forgotten_listed"] += len(set(t.forgotten) & listed)
            events = set(_all(http, "/v1/events", t.event_actor, "events", "event_id", 1000))
            out["events_missing"] += len(set(t.events) - events)
    return out


def _all(
    http: httpx.Client, path: str, actor: str, items: str, field: str, limit: int
) -> list[str]:
    """Every `field` of an actor's list, page by page (`next_cursor`)."""
    found: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"actor_id": actor, "limit": limit}
        if items == "records":
            params["all"] = "true"
        if cursor:
            params["cursor"] = cursor
        page = http.get(path, params=params)
        page.raise_for_status()
        data = page.json()
        found += [str(item[field]) for item in data[items] if item.get("status") != "deleted"]
        cursor = data.get("next_cursor")
        if not cursor:
            return found
